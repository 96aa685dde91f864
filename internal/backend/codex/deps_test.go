package codex_test

import (
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// Dependencies flow downward: the backend contract, the process
// lifecycle, the protocol's framing, the tool host and memory readings.
func TestImportsFlowDownward(t *testing.T) {
	testkit.CheckImports(t, "internal/backend", "internal/backend/codex/appserver", "internal/backend/subproc", "internal/backend/workdir",
		"internal/backend/toolhost", "internal/procgroup", "internal/procmem", "github.com/pelletier/go-toml/v2")
}
