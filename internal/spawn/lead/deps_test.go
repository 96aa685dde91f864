package lead

import (
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// A lead records and reads spawns and launches their workers; it never drives a CLI itself.
func TestImportsFlowDownward(t *testing.T) {
	testkit.CheckImports(t,
		"internal/spawn",
		"internal/procident",
		"internal/procgroup",
		"internal/spawn/registry",
		"internal/spawn/runner",
		"internal/store/sqlite",
	)
}
