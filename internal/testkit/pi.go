package testkit

import (
	"os"
	"testing"
)

// PiPath is the pinned Pi coding agent's CLI (MERIDIAN_TEST_PI, which
// ./scripts/install-pi prints). Without it the test is skipped, except
// under CI, where that fails the run.
func PiPath(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("MERIDIAN_TEST_PI"); p != "" {
		return p
	}
	Missing(t, "MERIDIAN_TEST_PI is not set (./scripts/install-pi prints the pinned Pi's path)", "Pi tests")
	return ""
}
