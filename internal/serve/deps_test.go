package serve

import (
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// serve assembles the gateway: it may reach everything it runs on, but nothing above it (the commands).
func TestImportsFlowDownward(t *testing.T) {
	testkit.CheckImports(t,
		"github.com/fsnotify/fsnotify",
		"internal/alerts",
		"internal/answers",
		"internal/backend",
		"internal/backend/agy",
		"internal/backend/claude",
		"internal/backend/codex",
		"internal/backend/toolhost",
		"internal/backend/workdir",
		"internal/clientsetup",
		"internal/cluster",
		"internal/config",
		"internal/dispatch",
		"internal/gateway",
		"internal/hooks",
		"internal/httpapi",
		"internal/journal",
		"internal/logring",
		"internal/inspector",
		"internal/capture",
		"internal/metrics",
		"internal/console",
		"internal/weblogin",
		"internal/tracing/otlp",
		"internal/modelalias",
		"internal/openai",
		"internal/pricing",
		"internal/reqid",
		"internal/updatecheck",
		"internal/crashreport",
		"internal/probe",
		"internal/procmem",
		"internal/apikeys",
		"internal/headroom",
		"internal/profile",
		"internal/responses",
		"internal/session",
		"internal/sessiontree",
		"internal/spawn/registry",
		"internal/store",
		"internal/store/postgres",
		"internal/store/sqlite",
		"internal/store/sqlstore",
		"internal/telemetry/history",
		"internal/termlog",
		"internal/transcripts",
	)
}
