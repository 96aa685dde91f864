package testkit

import (
	"fmt"
	"os"
	"testing"
)

// PiPath is the pinned Pi coding agent's CLI (MERIDIAN_TEST_PI, which
// ./scripts/install-pi prints). Without it the test is skipped, except
// under CI, where that fails the run.
func PiPath(t testing.TB) string {
	t.Helper()
	return pinned(t, "MERIDIAN_TEST_PI", "./scripts/install-pi", "Pi")
}

// pinned is the path a pinned tool's install script printed into the
// variable named env.
func pinned(t testing.TB, env, script, what string) string {
	t.Helper()
	if p := os.Getenv(env); p != "" {
		return p
	}
	Missing(t, fmt.Sprintf("%s is not set (%s prints the pinned %s's path)", env, script, what), what+" tests")
	return ""
}

// OpenCodePath is the pinned OpenCode's CLI (MERIDIAN_TEST_OPENCODE, which
// ./scripts/install-opencode prints), skipped or failed as PiPath is.
func OpenCodePath(t testing.TB) string {
	t.Helper()
	return pinned(t, "MERIDIAN_TEST_OPENCODE", "./scripts/install-opencode", "OpenCode")
}
