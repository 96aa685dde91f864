package runner

import (
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// The worker drives claude for one spawn: the driver, the registry and the store, no gateway.
func TestImportsFlowDownward(t *testing.T) {
	testkit.CheckImports(t,
		"internal/anthropic",
		"internal/procgroup",
		"internal/backend",
		"internal/backend/claude",
		"internal/spawn",
		"internal/procident",
		"internal/spawn/registry",
		"internal/store/sqlite",
	)
}
