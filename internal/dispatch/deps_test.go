package dispatch

import (
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// Dispatch sits between the HTTP front and the gateway: it knows no
// transport and imports only what it decides over.
func TestImportsFlowDownward(t *testing.T) {
	testkit.CheckImports(t, "internal/answers", "internal/anthropic", "internal/failover", "internal/gateway", "internal/headroom",
		"internal/journal", "internal/retryafter", "internal/store")
}
