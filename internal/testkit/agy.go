package testkit

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// FakeAgy builds the agy stand-in (testkit/fakeagy) and prepares it to
// play scenario (marshalled to its scenario file). It returns the binary
// and the environment to run it in: its own HOME (where it keeps
// conversations and reads global hooks), the scenario, and its call log.
// Antigravity's CLI cannot be installed here; everything the Antigravity
// backend does is checked against this stand-in, built from recorded real
// output.
func FakeAgy(t testing.TB, scenario any) (path string, env []string, calls func() []map[string]any) {
	t.Helper()
	dir := t.TempDir()
	path = filepath.Join(dir, "agy")
	build := exec.Command("go", "build", "-o", path, "./internal/testkit/fakeagy")
	build.Dir = RepoRoot(t)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the agy stand-in: %v\n%s", err, out)
	}
	b, err := json.Marshal(scenario)
	if err != nil {
		t.Fatal(err)
	}
	scenarioFile, logFile := filepath.Join(dir, "scenario.json"), filepath.Join(dir, "calls.jsonl")
	if err := os.WriteFile(scenarioFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(dir, "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "FAKE_AGY_SCENARIO=" + scenarioFile, "FAKE_AGY_LOG=" + logFile}
	return path, env, func() []map[string]any { return readCalls(t, logFile) }
}

func readCalls(t testing.TB, file string) []map[string]any {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}
