package gateway

import (
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// The gateway orchestrates one request and knows no transport: neither the HTTP front, nor dispatch, nor a driver.
func TestImportsFlowDownward(t *testing.T) {
	testkit.CheckImports(t,
		"internal/adapter",
		"internal/admission",
		"internal/anthropic",
		"internal/backend",
		"internal/capture",
		"internal/failover",
		"internal/lineage",
		"internal/pool",
		"internal/procmem",
		"internal/replay",
		"internal/retryafter",
		"internal/schemacheck",
		"internal/session",
		"internal/sessiontree",
		"internal/spareplan",
		"internal/suggest",
		"internal/telemetry",
		"internal/textstop",
		"internal/tracing",
	)
}
