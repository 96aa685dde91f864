package forward

import (
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// Forwarding knows the hosts through dispatch's view of them and each
// API's stream only as far as ending it with the API's error.
func TestImportsFlowDownward(t *testing.T) {
	testkit.CheckImports(t, "internal/anthropic", "internal/dispatch", "internal/gateway", "internal/openai", "internal/telemetry", "internal/tracing")
}
