package agy_test

import (
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// Dependencies flow downward: this package imports only what it owns
// beyond the standard library, and the MCP SDK its client-tools server is
// built on.
func TestImportsFlowDownward(t *testing.T) {
	testkit.CheckImports(t, "internal/backend", "internal/backend/agy/events", "internal/backend/subproc", "internal/backend/toolhost", "internal/backend/workdir",
		"github.com/modelcontextprotocol/go-sdk/mcp")
}
