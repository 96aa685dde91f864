package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/probe"
	"github.com/meridian-gw/meridian/internal/testkit"
)

// status runs `meridian status` for a port and returns its output and
// exit code.
func status(t *testing.T, bin, port string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"status", "--port", port}, args...)...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir()}
	return combined(t, cmd)
}

// combined runs cmd and returns its output and exit code; failing to run
// it at all fails the test.
func combined(t *testing.T, cmd *exec.Cmd) (string, int) {
	t.Helper()
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return string(out), exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return string(out), 0
}

func portOf(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Port()
}

// `meridian status` against a running instance, a foreign server and
// nothing; and `meridian serve` on a port another Meridian holds.
func TestStatusThroughTheBinary(t *testing.T) {
	g := newGateway(t)
	g.up.Always(testkit.Reply{Text: "ok"})
	g.start()
	if resp, body, err := g.post(prompt("one request")); err != nil || resp.StatusCode != 200 {
		t.Fatalf("request: %v %s", err, body)
	}
	port := portOf(t, g.url)

	out, code := status(t, g.bin, port)
	if code != 0 || !strings.Contains(out, "Meridian dev at http://127.0.0.1:"+port) || !strings.Contains(out, "pid "+strconv.Itoa(g.cmd.Process.Pid)) ||
		!strings.Contains(out, "claude     "+testkit.ClaudeVersion(t)) {
		t.Errorf("status of a running instance (exit %d):\n%s", code, out)
	}
	// The history writes in batches: the request shows within a second.
	err := testkit.WaitFor(5*time.Second, func() error {
		out, code = status(t, g.bin, port, "--json")
		var r probe.Report
		if err := json.Unmarshal([]byte(out), &r); err != nil || code != 0 || !r.Meridian || r.PID != g.cmd.Process.Pid || r.Today == nil || r.Today.Requests != 1 {
			return fmt.Errorf("status --json (exit %d, %v):\n%s", code, err, out)
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}

	// Another meridian on the same port says who holds it.
	second := exec.Command(g.bin, "--port", port, "--data-dir", t.TempDir(), "--claude-path", testkit.ClaudePath(t))
	second.Env = g.env
	msg, err2 := second.CombinedOutput()
	if err2 == nil || !strings.Contains(string(msg), "taken by another Meridian") || !strings.Contains(string(msg), "pid "+strconv.Itoa(g.cmd.Process.Pid)) {
		t.Errorf("serve on a taken port: %v\n%s", err2, msg)
	}

	foreign := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Server", "not-meridian/1.0")
		http.NotFound(w, r)
	}))
	defer foreign.Close()
	out, code = status(t, g.bin, portOf(t, foreign.URL))
	if code != 2 || !strings.Contains(out, "not Meridian") || !strings.Contains(out, "not-meridian/1.0") {
		t.Errorf("status of a foreign server (exit %d):\n%s", code, out)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	free := portOf(t, "http://"+ln.Addr().String())
	ln.Close()
	out, code = status(t, g.bin, free)
	if code != 1 || !strings.Contains(out, "nothing is listening") {
		t.Errorf("status of nothing (exit %d):\n%s", code, out)
	}

	// A Meridian that cannot serve (no CLI where it looks) exits 3, and
	// says so in words, without placeholders.
	lost := newGateway(t)
	lost.start("--claude-path", filepath.Join(t.TempDir(), "no-claude"))
	out, code = status(t, lost.bin, portOf(t, lost.url))
	if code != 3 || !strings.Contains(out, "status     unavailable") || !strings.Contains(out, "…/no-claude") || strings.ContainsAny(out, "<>") {
		t.Errorf("status of a Meridian without its CLI (exit %d):\n%s", code, out)
	}
}
