package toolhost_test

import (
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// The tool host knows the backend contract and the MCP SDK, nothing of
// any CLI.
func TestImportsFlowDownward(t *testing.T) {
	testkit.CheckImports(t, "internal/backend", "github.com/modelcontextprotocol/go-sdk/mcp")
}
