package e2e

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// With --crash-dsn, a handler's panic reaches a Sentry-protocol receiver
// (loopback here) as one envelope — the panic's kind, its stack and the
// version — with no prompt text, key or local path in it; the same panic
// again is not sent again.
func TestAPanicIsReportedOnceWithoutPromptOrPath(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var bodies, auths []string
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/api/42/envelope/" {
			mu.Lock()
			bodies, auths = append(bodies, string(b)), append(auths, r.Header.Get("X-Sentry-Auth"))
			mu.Unlock()
		}
		_, _ = w.Write([]byte(`{"id":"x"}`))
	}))
	defer receiver.Close()
	g := newAgyGateway(t, map[string]any{})
	dsn := strings.Replace(receiver.URL, "http://", "http://publickey123@", 1) + "/42"
	g.gatewayProc.start("--backend", "antigravity", "--agy-path", g.agy, "--admin-key", "ADMIN-SECRET-KEY-1", "--crash-dsn", dsn, "--test-panic")
	for range 2 {
		req, _ := http.NewRequest(http.MethodGet, g.url+"/test/panic", nil)
		req.Header.Set("X-Api-Key", "ADMIN-SECRET-KEY-1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusInternalServerError {
			t.Fatalf("the panic answered %s", resp.Status)
		}
	}
	reports := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(bodies)
	}
	if err := testkit.WaitFor(10*time.Second, func() error {
		if reports() == 0 {
			return io.EOF
		}
		return nil
	}); err != nil {
		t.Fatalf("no crash report arrived\n%s", g.log.String())
	}
	time.Sleep(testkit.Scale(300 * time.Millisecond)) // a second report, were one sent, would be here by now
	mu.Lock()
	defer mu.Unlock()
	if len(bodies) != 1 || !strings.Contains(auths[0], "sentry_key=publickey123") {
		t.Fatalf("%d reports, auth %q", len(bodies), auths)
	}
	body := bodies[0]
	for _, want := range []string{`"type":"event"`, `"level":"fatal"`, `"release":"meridian@`, `"type":"string"`, "github.com/meridian-gw/meridian/internal/httpapi"} {
		if !strings.Contains(body, want) {
			t.Fatalf("the report lacks %q:\n%s", want, body)
		}
	}
	home, _ := os.UserHomeDir()
	for _, secret := range []string{"PROMPT-TEXT-NOT-TO-REPORT", "ADMIN-SECRET-KEY-1", os.TempDir(), g.dataDir, "/work/", home + "/"} {
		if strings.Contains(body, secret) {
			t.Fatalf("the report holds %q:\n%s", secret, body)
		}
	}
}

// A panic that ends the process (on a goroutine of its own) is reported
// at the next start, from the crash output the last run left in the data
// dir: the runtime's message and the frames, no path.
func TestAFatalCrashIsReportedAtTheNextStart(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var bodies []string
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
	}))
	defer receiver.Close()
	g := newAgyGateway(t, map[string]any{})
	dsn := strings.Replace(receiver.URL, "http://", "http://publickey123@", 1) + "/42"
	args := []string{"--backend", "antigravity", "--agy-path", g.agy, "--crash-dsn", dsn, "--test-panic"}
	g.gatewayProc.start(args...)
	if resp, err := http.Get(g.url + "/test/crash"); err == nil {
		resp.Body.Close()
		t.Fatal("the crash route answered")
	}
	_ = g.cmd.Wait()
	mu.Lock()
	n := len(bodies)
	mu.Unlock()
	if n != 0 {
		t.Fatalf("%d reports before the restart", n)
	}
	g.gatewayProc.start(args...)
	if err := testkit.WaitFor(10*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(bodies) == 0 {
			return io.EOF
		}
		return nil
	}); err != nil {
		t.Fatalf("the crash was not reported at the next start\n%s", g.log.String())
	}
	mu.Lock()
	defer mu.Unlock()
	body := bodies[0]
	if len(bodies) != 1 || !strings.Contains(body, "runtime error: index out of range [") || !strings.Contains(body, "github.com/meridian-gw/meridian/internal/httpapi") {
		t.Fatalf("%d reports:\n%s", len(bodies), body)
	}
	if strings.Contains(body, os.TempDir()) || strings.Contains(body, g.dataDir) || strings.Contains(body, "/work/") {
		t.Fatalf("the report names a local path:\n%s", body)
	}
}
