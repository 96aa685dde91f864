package procgroup_test

import (
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

func TestImportsFlowDownward(t *testing.T) {
	testkit.CheckImports(t, "golang.org/x/sys/windows")
}
