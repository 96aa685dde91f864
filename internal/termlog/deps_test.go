package termlog

import (
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// termlog formats log lines: the standard library alone.
func TestImportsFlowDownward(t *testing.T) { testkit.CheckImports(t) }
