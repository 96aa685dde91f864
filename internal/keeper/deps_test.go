package keeper

import (
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// The keeper asks the gateway only through the probe.
func TestImportsFlowDownward(t *testing.T) {
	testkit.CheckImports(t, "internal/probe", "internal/procgroup")
}
