package testkit

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// HookModule builds the test hook (testkit/hookprog) as a WASI command
// module and returns its file. Its first argument after the hook's name
// says what it does: "tag NAME VALUE" adds a header (and metadata to a
// request body), "spin" never ends, "big N" answers N bytes and more,
// "fail" exits 3, "refuse" refuses with a 403.
func HookModule(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "hook.wasm")
	build := exec.Command("go", "build", "-o", path, "./internal/testkit/hookprog")
	build.Dir = RepoRoot(t)
	build.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the test hook: %v\n%s", err, out)
	}
	return path
}
