package subproc_test

import (
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

func TestImportsFlowDownward(t *testing.T) { testkit.CheckImports(t, "internal/procgroup") }
