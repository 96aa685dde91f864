package httpapi

import (
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// The HTTP front decodes, routes and renders; it reaches backends only through dispatch and the gateway, never a driver or the store.
func TestImportsFlowDownward(t *testing.T) {
	testkit.CheckImports(t,
		"internal/adapter",
		"internal/alerts",
		"internal/answers",
		"internal/anthropic",
		"internal/apikeys",
		"internal/backend",
		"internal/capture",
		"internal/clientsetup",
		"internal/console",
		"internal/weblogin",
		"internal/cluster",
		"internal/dispatch",
		"internal/forward",
		"internal/gateway",
		"internal/hooks",
		"internal/inspector",
		"internal/keyrule",
		"internal/jsonbody",
		"internal/logring",
		"internal/metrics",
		"internal/modelalias",
		"internal/openai",
		"internal/pricing",
		"internal/reqid",
		"internal/crashreport",
		"internal/responses",
		"internal/retryafter",
		"internal/suggest",
		"internal/telemetry",
		"internal/tracing",
		"internal/telemetry/history",
		"internal/web",
	)
}
