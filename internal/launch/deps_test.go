package launch

import (
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// meridian claude's launch knows spawns as a lead does, never a driver or the gateway.
func TestImportsFlowDownward(t *testing.T) {
	testkit.CheckImports(t,
		"internal/config",
		"internal/spawn",
		"internal/spawn/lead",
		"internal/procident",
		"mods",
	)
}
