package claude_test

import (
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// Dependencies flow downward: this package imports only what it owns
// beyond the standard library.
func TestImportsFlowDownward(t *testing.T) {
	testkit.CheckImports(t, "internal/backend", "internal/backend/subproc", "internal/procgroup", "internal/procmem")
}
