package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// Request hooks from the settings file, as an operator writes them: a
// WebAssembly transform (compiled at start, kept in the data dir's cache)
// that adds a header, a command observer that counts, and an answer
// transform. A hook that cannot run stops meridian at its start, naming
// the hook.
func TestSettingsFileHooks(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	dir := t.TempDir()
	count := filepath.Join(dir, "count")
	settings := filepath.Join(dir, "config.toml")
	text := `
[[hooks]]
name = "tag"
stage = "request"
mode = "transform"
wasm = "` + testkit.HookModule(t) + `"
args = ["tag", "x-meridian-profile", "no-such-profile"]
apis = ["chat"]
timeout = "20s"

[[hooks]]
name = "count"
stage = "request"
command = ["sh", "-c", "cat >/dev/null; echo seen >> ` + count + `"]

[[hooks]]
name = "audit"
stage = "answer"
mode = "transform"
command = ["sh", "-c", "cat >/dev/null; echo '{\"headers\":{\"x-audited\":\"yes\"}}'"]
timeout = "5s"
max_bytes = 65536
`
	if err := os.WriteFile(settings, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	g.env = append(g.env, "MERIDIAN_CONFIG="+settings)
	g.up.Always(testkit.Reply{Text: "ok"})
	g.start()
	resp, body, err := g.post(prompt("hello"))
	if err != nil || resp.StatusCode != 200 || resp.Header.Get("X-Audited") != "yes" {
		t.Fatalf("messages: %v %v %s", err, resp, body)
	}
	// The module's header chose a profile that does not exist: the
	// profile choice saw what the hook made.
	resp, body, err = g.postPath("/v1/chat/completions", `{"model":"test-model","messages":[{"role":"user","content":"hi"}]}`)
	if err != nil || resp.StatusCode != 400 || !strings.Contains(body, `unknown profile \"no-such-profile\"`) || !strings.Contains(body, `"error":{"message"`) {
		t.Fatalf("chat: %v %v %s", err, resp, body)
	}
	if b, _ := os.ReadFile(count); strings.Count(string(b), "seen") != 2 {
		t.Fatalf("the observer counted %q", b)
	}
	if entries, _ := os.ReadDir(filepath.Join(g.dataDir, "hooks-cache")); len(entries) == 0 {
		t.Fatal("the compiled module was not kept")
	}

	bad := filepath.Join(dir, "bad.toml")
	if err := os.WriteFile(bad, []byte("[[hooks]]\nname = \"gone\"\nstage = \"request\"\ncommand = [\"no-such-hook-program\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(g.bin, "--port", "0", "--data-dir", t.TempDir(), "--claude-path", testkit.ClaudePath(t))
	cmd.Env = append(append([]string(nil), g.env...), "MERIDIAN_CONFIG="+bad)
	out, code := combined(t, cmd)
	if code == 0 || !strings.Contains(out, "hook gone") || !strings.Contains(out, "no-such-hook-program") {
		t.Fatalf("a hook that cannot run: exit %d\n%s", code, out)
	}
}
