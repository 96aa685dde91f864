package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// gatewayProc is the meridian binary serving the real claude against a fake
// upstream, on a data dir that outlives it.
type gatewayProc struct {
	t       testing.TB
	bin     string
	env     []string
	dataDir string
	up      *testkit.Upstream
	marker  string
	cmd     *exec.Cmd
	url     string
	log     testkit.Log  // everything meridian logged, over every start
	seen    map[int]bool // claude processes treeTicks counts until reaped
}

func newGateway(t testing.TB) *gatewayProc {
	t.Helper()
	up := testkit.NewUpstream(t)
	env, marker := testkit.ClaudeEnv(t, up.URL)
	g := &gatewayProc{t: t, bin: buildBinary(t), env: env, dataDir: t.TempDir(), up: up, marker: marker}
	t.Cleanup(func() {
		// Every secret a test hands meridian is spelled with SECRET in it:
		// none may show on a command line of meridian or its CLIs.
		for _, pid := range testkit.Processes(marker) {
			if argv, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline")); bytes.Contains(argv, []byte("SECRET")) {
				t.Errorf("process %d has a secret on its command line", pid)
			}
		}
		if g.cmd != nil && g.cmd.ProcessState == nil {
			_ = g.cmd.Process.Kill()
			_ = g.cmd.Wait()
		}
		for _, pid := range testkit.Processes(marker) {
			testkit.Kill(pid)
		}
		noSecretLogged(t, g.log.String())
	})
	return g
}

// issuedKey matches a key `meridian key` made: its prefix and 26 base32
// characters.
var issuedKey = regexp.MustCompile(`mk-[A-Z2-7]{26}`)

// noSecretLogged fails the test for a log line holding a test's secret
// (spelled with SECRET) or any key `meridian key` issued.
func noSecretLogged(t testing.TB, log string) {
	t.Helper()
	for line := range strings.Lines(log) {
		if strings.Contains(line, "SECRET") || issuedKey.MatchString(line) {
			t.Errorf("meridian logged a secret: %s", line)
		}
	}
}

// start runs meridian on a free port (again, after a crash: same data dir).
func (g *gatewayProc) start(args ...string) {
	g.t.Helper()
	g.cmd = exec.Command(g.bin, append([]string{"--port", "0", "--data-dir", g.dataDir, "--claude-path", testkit.ClaudePath(g.t)}, args...)...)
	g.cmd.Env = g.env
	g.url = "http://" + testkit.StartMeridian(g.t, g.cmd, &g.log)
}

// post sends a Messages request; the response is returned whatever its
// status.
func (g *gatewayProc) post(body string, header ...string) (*http.Response, string, error) {
	return g.postCtx(context.Background(), body, header...)
}

// postCtx is post under ctx.
func (g *gatewayProc) postCtx(ctx context.Context, body string, header ...string) (*http.Response, string, error) {
	return g.postTo(ctx, "/v1/messages", body, header...)
}

// postPath sends a request to another route.
func (g *gatewayProc) postPath(path, body string, header ...string) (*http.Response, string, error) {
	return g.postTo(context.Background(), path, body, header...)
}

func (g *gatewayProc) postTo(ctx context.Context, path, body string, header ...string) (*http.Response, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.url+path, strings.NewReader(body))
	if err != nil {
		return nil, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Api-Key", "client-key")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b), nil
}

func prompt(text string) string {
	return fmt.Sprintf(`{"model":"test-model","max_tokens":100,"messages":[{"role":"user","content":%q}]}`, text)
}

// upstreamHad counts the requests the upstream has had whose last user
// message holds text.
func upstreamHad(up *testkit.Upstream, text string) int {
	n := 0
	for _, r := range up.Requests() {
		if strings.Contains(r.LastUserText(), text) {
			n++
		}
	}
	return n
}

// waitUpstreamHas waits until the upstream has had a request whose last
// user message holds text.
func waitUpstreamHas(t *testing.T, up *testkit.Upstream, text string) {
	t.Helper()
	if err := testkit.WaitFor(20*time.Second, func() error {
		if upstreamHad(up, text) == 0 {
			return errors.New("not yet")
		}
		return nil
	}); err != nil {
		t.Fatalf("no request with %q reached the upstream", text)
	}
}

// waitUpstream waits until the upstream has had a request.
// logShows waits a little for the log to hold want: a turn's log line
// may be written just after its answer reached the client.
func (g *gatewayProc) logShows(want string) bool {
	return testkit.WaitFor(5*time.Second, func() error {
		if !strings.Contains(g.log.String(), want) {
			return errors.New("not yet")
		}
		return nil
	}) == nil
}

func (g *gatewayProc) waitUpstream() {
	g.t.Helper()
	if err := testkit.WaitFor(20*time.Second, func() error {
		if len(g.up.Requests()) == 0 {
			return fmt.Errorf("no request reached the upstream")
		}
		return nil
	}); err != nil {
		g.t.Fatal(err)
	}
}

// claudes lists the CLI processes of this gateway, not meridian itself.
func (g *gatewayProc) claudes() []int {
	var out []int
	for _, pid := range testkit.Processes(g.marker) {
		if g.cmd != nil && g.cmd.Process != nil && pid == g.cmd.Process.Pid {
			continue
		}
		out = append(out, pid)
	}
	return out
}

// kill9 kills meridian as a crash would: no signal handler runs.
func (g *gatewayProc) kill9() {
	g.t.Helper()
	if err := g.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		g.t.Fatal(err)
	}
	_ = g.cmd.Wait()
}

// A meridian killed with SIGKILL takes its claude processes along, the
// idle live one, the busy one and the spare alike: the kernel's
// parent-death signal, not a handler that never runs.
func TestKilledGatewayLeavesNoClaude(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	g.up.Respond(testkit.When("busy", testkit.Reply{Hang: true}, testkit.Reply{Text: "done"}))
	g.start()
	if resp, body, err := g.post(prompt("idle one"), "X-Claude-Code-Session-Id", "idle"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("idle conversation: %v %s", err, body)
	}
	go func() { _, _, _ = g.post(prompt("busy one"), "X-Claude-Code-Session-Id", "busy") }()
	// The busy conversation took the spare the first one left; a new
	// spare waits beside them.
	if err := testkit.WaitFor(30*time.Second, func() error {
		if n := len(g.claudes()); n != 3 {
			return fmt.Errorf("%d claude processes, want one live, one busy and a spare", n)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	g.kill9()
	killed := time.Now()
	if err := testkit.WaitFor(2*time.Second, func() error {
		if pids := g.claudes(); len(pids) > 0 {
			return fmt.Errorf("claude processes outlived meridian: %v", pids)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("all three claude processes gone %v after the kill", time.Since(killed).Round(time.Millisecond))
}

// A request with a request id that was running when meridian died has an
// unknown outcome: after the restart the same request is refused with
// that reason, and the upstream saw it only once.
func TestRequestOfACrashedGatewayIsNotRunTwice(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	var calls atomic.Int32
	g.up.Respond(func(r testkit.Request) testkit.Reply {
		if strings.Contains(r.AllText(), "charge the card") {
			calls.Add(1)
			return testkit.Reply{Hang: true}
		}
		return testkit.Reply{Text: "ok"}
	})
	g.start()
	body := prompt("charge the card once")
	go func() { _, _, _ = g.post(body, "Idempotency-Key", "order-17") }()
	if err := testkit.WaitFor(30*time.Second, func() error {
		if calls.Load() == 0 {
			return fmt.Errorf("the request never reached the upstream")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	g.kill9()
	g.start()
	resp, answer, err := g.post(body, "Idempotency-Key", "order-17")
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusConflict || !strings.Contains(answer, "outcome is unknown") {
		t.Fatalf("the same request after the crash: %d %s", resp.StatusCode, answer)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("the upstream saw the request %d times", n)
	}
	// Another request id is another request.
	g.up.Always(testkit.Reply{Text: "charged"})
	if resp, answer, _ := g.post(body, "Idempotency-Key", "order-18"); resp == nil || resp.StatusCode != 200 || !bytes.Contains([]byte(answer), []byte("charged")) {
		t.Fatalf("a new request id: %v %s", resp, answer)
	}
}

// SIGTERM during a slow stream: the stream completes, a request meanwhile
// is refused with 503 and Retry-After, meridian exits 0 and leaves no
// claude process.
func TestSIGTERMDrainsTheRunningStream(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	g.up.Always(testkit.Reply{Text: strings.Repeat("word ", 80), ChunkSize: 5, ChunkDelay: 50 * time.Millisecond})
	g.start("--drain-timeout", "30s")
	streamed := make(chan string, 1)
	go func() {
		_, body, err := g.post(`{"model":"test-model","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"talk slowly"}]}`)
		if err != nil {
			body = err.Error()
		}
		streamed <- body
	}()
	if err := testkit.WaitFor(30*time.Second, func() error {
		if len(g.up.Requests()) == 0 {
			return fmt.Errorf("the stream never reached the upstream")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := g.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// The signal lands asynchronously: the drain has begun once the
	// gateway refuses a look at its root.
	if err := testkit.WaitFor(10*time.Second, func() error {
		r, err := http.Get(g.url + "/")
		if err != nil {
			return err
		}
		r.Body.Close()
		if r.StatusCode != http.StatusServiceUnavailable {
			return fmt.Errorf("GET / got %d, not yet draining", r.StatusCode)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	resp, _, err := g.post(prompt("too late"))
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a request during the drain: %v %v", resp, err)
	}
	if resp.Header.Get("Retry-After") == "" {
		t.Fatal("the drain's 503 carries no Retry-After")
	}
	body := <-streamed
	if !strings.Contains(body, "message_stop") || strings.Count(body, "word") < 80 {
		t.Fatalf("the stream did not complete:\n%s", body)
	}
	if err := g.cmd.Wait(); err != nil {
		t.Fatalf("meridian exited with %v", err)
	}
	if pids := g.claudes(); len(pids) > 0 {
		t.Fatalf("claude processes left: %v", pids)
	}
}
