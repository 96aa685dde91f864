package e2e

import (
	"database/sql"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// PostgreSQL stopped under a running meridian: the turn that was running
// finishes and says its state was not saved; new requests are refused
// with 503 and a wait, in each API's own shape and without a word of the
// store's address or a local path; once the server is back, the next
// request is answered without restarting meridian.
func TestStoreOutage(t *testing.T) {
	t.Parallel()
	pg := testkit.PostgresServer(t)
	dsn := pg.NewDatabase(t)
	up, gate := gatedUpstream(t)
	g := newHost(t, up)
	g.startOn("127.0.0.2", dsn, "--store-timeout", "1s")

	if resp, body, err := g.post(prompt("before"), "X-Claude-Code-Session-Id", "before"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("before the outage: %v %v %s", err, resp, body)
	}

	type answer struct {
		resp *http.Response
		body string
		err  error
	}
	running := make(chan answer, 1)
	go func() {
		resp, body, err := g.post(prompt("slow"), "X-Claude-Code-Session-Id", "running")
		running <- answer{resp, body, err}
	}()
	waitUpstreamHas(t, up, "slow")
	if err := pg.Stop(); err != nil {
		t.Fatal(err)
	}
	close(gate)
	got := <-running
	if got.err != nil || got.resp.StatusCode != http.StatusOK || !strings.Contains(got.body, "slow answer") {
		t.Fatalf("the turn running when the store went away: %v %v %s", got.err, got.resp, got.body)
	}
	if got.resp.Header.Get("X-Meridian-Unsaved") == "" {
		t.Fatal("the running turn's answer does not say its state was not saved")
	}

	refused := func(what string, resp *http.Response, body string, shape string) {
		t.Helper()
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || !strings.Contains(body, shape) {
			t.Fatalf("%s while the store is down: %d retry-after %q: %s", what, resp.StatusCode, resp.Header.Get("Retry-After"), body)
		}
		for _, secret := range []string{pg.Addr(), "postgres://", g.dataDir, "dial", "connect:"} {
			if strings.Contains(body, secret) {
				t.Fatalf("%s's error names %q: %s", what, secret, body)
			}
		}
	}
	asked := time.Now()
	resp, body, err := g.post(prompt("during"), "X-Claude-Code-Session-Id", "during")
	if err != nil {
		t.Fatal(err)
	}
	refused("a Messages request", resp, body, `"type":"error"`)
	t.Logf("refused in %v while the store is down: %s", time.Since(asked).Round(time.Millisecond), body)
	resp, body, err = g.postPath("/v1/chat/completions", `{"model":"test-model","messages":[{"role":"user","content":"during"}]}`,
		"X-Session-Id", "during-chat")
	if err != nil {
		t.Fatal(err)
	}
	refused("a chat completion", resp, body, `"error":{`)

	if err := pg.Start(); err != nil {
		t.Fatal(err)
	}
	resp, body, err = g.post(prompt("after"), "X-Claude-Code-Session-Id", "after")
	if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(body, "answer to after") {
		t.Fatalf("the first request once the store is back: %v %v %s", err, resp, body)
	}

	// A store that answers too slowly is the same as none: a lock held on
	// the conversations holds each call for its own deadline, not the
	// pool's patience.
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(`LOCK TABLE conversations IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	asked = time.Now()
	resp, body, err = g.post(prompt("slow store"), "X-Claude-Code-Session-Id", "slow-store")
	_ = tx.Rollback()
	if err != nil {
		t.Fatal(err)
	}
	refused("a Messages request on a slow store", resp, body, `"type":"error"`)
	t.Logf("refused in %v while the store is locked (store timeout 1 s)", time.Since(asked).Round(time.Millisecond))
	if resp, body, err := g.post(prompt("after"), "X-Claude-Code-Session-Id", "after-lock"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("once the lock is gone: %v %v %s", err, resp, body)
	}

	// Nothing of the running turn was half-written: its conversation was
	// never saved, so it is unknown.
	var info map[string]any
	req, _ := http.NewRequest(http.MethodGet, g.url+"/v1/sessions/running", nil)
	req.Header.Set("X-Api-Key", "client-key")
	sresp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	sresp.Body.Close()
	if sresp.StatusCode != http.StatusNotFound {
		g.getJSON("/v1/sessions/running", &info)
		t.Fatalf("the conversation whose turn could not be saved: %d %v", sresp.StatusCode, info)
	}
}

// A store that cannot be reached at start stops meridian with an error
// naming where it was looked for, never its password: it does not go on
// with the data dir's SQLite instead.
func TestUnreachableStoreStopsServe(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	dataDir := t.TempDir()
	cmd := exec.Command(buildBinary(t), "serve", "--port", "0", "--data-dir", dataDir,
		"--claude-path", testkit.ClaudePath(t), "--store", "postgres://meridian:hunter2-secret@"+addr+"/meridian")
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || !strings.Contains(string(out), "PostgreSQL at "+addr+"/meridian cannot be reached") ||
		strings.Contains(string(out), "hunter2-secret") {
		t.Fatalf("serve on an unreachable store: %v\n%s", err, out)
	}
}
