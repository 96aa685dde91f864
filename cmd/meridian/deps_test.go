package main

import (
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// cmd/meridian is flags and output: it reaches the packages that run
// things through their entry points and defaults, never the store, the
// session state or a driver's internals.
func TestImportsFlowDownward(t *testing.T) {
	testkit.CheckImports(t,
		"github.com/spf13/cobra", "github.com/spf13/cobra/doc", "github.com/spf13/pflag", "golang.org/x/sys/unix",
		"internal/apikeys", "internal/backend", "internal/backend/agy", "internal/clientsetup", "internal/config", "internal/gateway", "internal/httpapi",
		"internal/launch", "internal/pool", "internal/probe", "internal/profile", "internal/responses",
		"internal/serve", "internal/service", "internal/spawn", "internal/spawn/lead", "internal/spawn/registry",
		"internal/spawn/runner", "internal/spawn/statusline", "internal/telemetry/history", "internal/transcripts", "internal/updatecheck",
	)
}
