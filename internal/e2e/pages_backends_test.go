package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// fetch sends a request with headers given as name, value pairs and
// reads the whole answer.
func fetch(t *testing.T, method, url, body string, header ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// page is GET url as a browser asks for it.
func page(t *testing.T, url string) string {
	t.Helper()
	_, body := fetch(t, http.MethodGet, url, "", "Accept", "text/html")
	return body
}

// Under --backend antigravity the landing page and the dashboard speak of
// agy, not claude.
func TestPagesNameTheAntigravityBackend(t *testing.T) {
	t.Parallel()
	g := newAgyGateway(t, map[string]any{})
	g.start()
	body := page(t, g.url+"/")
	for _, want := range []string{"backend antigravity", "agy CLI", "agy processes"} {
		if !strings.Contains(body, want) {
			t.Errorf("the landing page lacks %q", want)
		}
	}
	// Claude Code is a client like any other in the setup hints; the rest
	// of the page speaks of the backend.
	backend, _, _ := strings.Cut(body, `id="setup"`)
	if strings.Contains(backend, "claude") {
		t.Errorf("the landing page of an agy backend speaks of claude:\n%s", body)
	}
	if dash := page(t, g.url+"/telemetry"); !strings.Contains(dash, "agy processes") || strings.Contains(dash, "claude processes") {
		t.Error("the dashboard's processes card does not name agy")
	}
}

// --backend combined: the landing page shows both CLIs, /inflight counts
// both backends, and the dashboard's processes are the CLIs' together.
func TestPagesAndInflightShowBothCombinedBackends(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	agyPath, agyEnv, _ := testkit.FakeAgy(t, map[string]any{})
	g.env = append(g.env, agyEnv...)
	g.start("--backend", "combined", "--agy-path", agyPath)
	body := page(t, g.url+"/")
	for _, want := range []string{"backend claude, antigravity", "claude CLI", "agy CLI", "under /antigravity/", "CLI processes"} {
		if !strings.Contains(body, want) {
			t.Errorf("the combined landing page lacks %q", want)
		}
	}
	_, raw := testkit.Get(t, g.url+"/inflight")
	var in struct {
		Backends map[string]json.RawMessage `json:"backends"`
	}
	if err := json.Unmarshal([]byte(raw), &in); err != nil || in.Backends["claude"] == nil || in.Backends["antigravity"] == nil {
		t.Fatalf("/inflight shows %s", raw)
	}
}

// /health answers without a key, so it names no local path: not where the
// CLI is, nor where it was looked for.
func TestHealthNamesNoLocalPath(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	missing := filepath.Join(t.TempDir(), "secret-dir", "claude")
	cmd, addr, _ := testkit.ServeMeridian(t, bin, "--claude-path", missing)
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	code, body := testkit.Get(t, "http://"+addr+"/health")
	if code != http.StatusServiceUnavailable || strings.Contains(body, "secret-dir") || strings.Contains(body, "/tmp") {
		t.Fatalf("health %d: %s", code, body)
	}
	g := newGateway(t)
	g.start()
	if _, body := testkit.Get(t, g.url+"/health"); strings.Contains(body, `"path"`) || strings.Contains(body, testkit.ClaudePath(t)) {
		t.Fatalf("a healthy CLI's path is on /health: %s", body)
	}
}

// /v1/sessions scoped to a profile lists that profile's conversations
// only; unscoped, every profile's, each naming its profile.
func TestSessionsOfAProfileOnly(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	g.up.Always(testkit.Reply{Text: "ok"})
	twoProfiles(t, g, "sk-ant-a-SECRET", "sk-ant-b-SECRET")
	g.start()
	if resp, body, err := g.post(prompt("on a"), "X-Claude-Code-Session-Id", "conv-on-a", "X-Meridian-Profile", "a"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("a's turn: %v %s", err, body)
	}
	list := func(profile string) string {
		var header []string
		if profile != "" {
			header = []string{"X-Meridian-Profile", profile}
		}
		_, body := fetch(t, http.MethodGet, g.url+"/v1/sessions", "", header...)
		return body
	}
	if got := list("b"); strings.Contains(got, "conv-on-a") {
		t.Fatalf("profile b lists a's conversation: %s", got)
	}
	if got := list("a"); !strings.Contains(got, "conv-on-a") {
		t.Fatalf("profile a does not list its conversation: %s", got)
	}
	if got := list(""); !strings.Contains(got, `"profile":"a","key":"conv-on-a"`) {
		t.Fatalf("the unscoped list: %s", got)
	}
}
