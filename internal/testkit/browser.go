package testkit

import (
	"os"
	"os/exec"
	"testing"
)

// Chromium returns a headless Chromium for page tests: MERIDIAN_TEST_CHROMIUM,
// else Debian's chromium-headless-shell or chromium on PATH. Without one
// the test is skipped, except under CI, where that fails the run
// (./scripts/test installs it).
func Chromium(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("MERIDIAN_TEST_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium-headless-shell", "chromium", "chromium-browser", "headless_shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	Missing(t, "no headless Chromium found (apt-get install chromium-headless-shell, or set MERIDIAN_TEST_CHROMIUM)", "page tests")
	return ""
}

// Missing skips a test that lacks a part it needs, except under CI, where
// that fails the run: CI installs every part, and a skip there would
// hide a test that never ran.
func Missing(t testing.TB, msg, what string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("%s (CI is set: %s may not be skipped)", msg, what)
	}
	t.Skip(msg)
}
