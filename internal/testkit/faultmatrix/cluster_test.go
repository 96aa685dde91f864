//go:build faultmatrix

package faultmatrix

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/procgroup"
	"github.com/meridian-gw/meridian/internal/testkit"
)

// Timings every host shares, short so that a probe of a dead or paused
// holder ends in seconds.
const (
	hostExpiry   = 3 * time.Second
	pingInterval = time.Second
	bodyTimeout  = 3 * time.Second
	clusterKey   = "fault-matrix-cluster-key"
)

// host is one meridian of the three.
type host struct {
	t      *testing.T
	ip     string
	port   int
	bin    string
	dsn    string
	claude string
	env    []string
	extra  []string
	marker string
	data   string
	id     string
	cmd    *exec.Cmd
	log    *testkit.Log
	exited chan struct{}
}

func (h *host) url() string { return "http://" + net.JoinHostPort(h.ip, strconv.Itoa(h.port)) }

// start runs the host (again, after a kill, on its data dir and port)
// and waits until it is ready.
func (h *host) start() {
	h.t.Helper()
	h.log = &testkit.Log{}
	h.cmd = exec.Command(h.bin, "serve", "--host", h.ip, "--port", strconv.Itoa(h.port), "--data-dir", h.data,
		"--store", h.dsn, "--cluster-key", clusterKey, "--host-expiry", hostExpiry.String(),
		"--body-timeout", bodyTimeout.String(), "--spares", "0", "--claude-path", h.claude, "--drain-timeout", "20s")
	h.cmd.Args = append(h.cmd.Args, h.extra...)
	h.cmd.Env = h.env
	h.cmd.Stdout, h.cmd.Stderr = h.log, h.log
	if err := h.cmd.Start(); err != nil {
		h.t.Fatal(err)
	}
	h.exited = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) { _ = cmd.Wait(); close(done) }(h.cmd, h.exited)
	if err := testkit.WaitFor(30*time.Second, func() error {
		resp, err := http.Get(h.url() + "/ready")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		var ready struct{ Host string }
		if err := json.NewDecoder(resp.Body).Decode(&ready); err != nil || resp.StatusCode != http.StatusOK {
			return fmt.Errorf("ready: %d %v", resp.StatusCode, err)
		}
		h.id = ready.Host
		return nil
	}); err != nil {
		h.t.Fatalf("host %s: %v\n%s", h.ip, err, h.log.String())
	}
}

func (h *host) running() bool {
	select {
	case <-h.exited:
		return false
	default:
		return true
	}
}

// ensure starts the host if a probe before killed it.
func (h *host) ensure() {
	h.t.Helper()
	if !h.running() {
		h.start()
	}
}

func (h *host) signal(sig syscall.Signal) {
	h.t.Helper()
	if err := h.cmd.Process.Signal(sig); err != nil {
		h.t.Fatal(err)
	}
}

func (h *host) kill9() {
	h.t.Helper()
	h.signal(syscall.SIGKILL)
	<-h.exited
}

// claudes counts the CLI processes of this host (the marker is its own).
func (h *host) claudes() int {
	n := 0
	for _, pid := range testkit.Processes(h.marker) {
		if pid != h.cmd.Process.Pid {
			n++
		}
	}
	return n
}

// cluster is the matrix's gateway: three hosts, one store, one balancer.
type cluster struct {
	up    *testkit.Upstream
	pg    *testkit.Postgres
	hosts []*host
	lb    string
}

// story is the fake upstream's script. Prompts name what the model does:
// "long story" streams four words and then goes quiet (a holder in the
// middle of its answer); "worth ten seconds" answers after ten seconds;
// "hang on" never answers; "slowly" streams for four seconds; anything
// else is answered at once.
func story(r testkit.Request) testkit.Reply {
	text := r.LastUserText()
	switch {
	case strings.Contains(text, "long story"):
		return testkit.Reply{Chunks: []string{"once ", "upon ", "a ", "time "}, StallAfter: 6}
	case strings.Contains(text, "worth ten seconds"):
		return testkit.Reply{Text: "the considered answer to " + text, Delay: 10 * time.Second}
	case strings.Contains(text, "hang on"):
		return testkit.Reply{Hang: true}
	case strings.Contains(text, "slowly"):
		return testkit.Reply{Chunks: []string{"one ", "two ", "three ", "four ", "five ", "six ", "seven ", "eight "},
			ChunkDelay: 500 * time.Millisecond}
	}
	return testkit.Reply{Text: "answer to " + text}
}

func newCluster(t *testing.T) *cluster {
	t.Helper()
	claude := testkit.ClaudePath(t)
	// MATRIX_MERIDIAN runs the matrix on another build (an older main's,
	// to see what it found there); by default this tree is built.
	bin := os.Getenv("MATRIX_MERIDIAN")
	if bin == "" {
		bin = filepath.Join(t.TempDir(), "meridian")
		build := exec.Command("go", "build", "-o", bin, "./cmd/meridian")
		build.Dir = testkit.RepoRoot(t)
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
	}
	// A build from before --ping-interval pings every 15 s.
	var extra []string
	if help, _ := exec.Command(bin, "serve", "--help").Output(); strings.Contains(string(help), "--ping-interval") {
		extra = []string{"--ping-interval", pingInterval.String()}
	}
	c := &cluster{up: testkit.NewUpstream(t), pg: testkit.PostgresServer(t)}
	c.up.Respond(story)
	dsn := c.pg.NewDatabase(t)
	port := freePort(t, "127.0.0.2")
	var backends []string
	for _, ip := range []string{"127.0.0.2", "127.0.0.3", "127.0.0.4"} {
		env, marker := testkit.ClaudeEnv(t, c.up.URL)
		h := &host{t: t, ip: ip, port: port, bin: bin, dsn: dsn, claude: claude, env: env, extra: extra, marker: marker, data: t.TempDir()}
		h.start()
		c.hosts = append(c.hosts, h)
		backends = append(backends, net.JoinHostPort(ip, strconv.Itoa(port)))
		t.Cleanup(func() {
			if h.running() {
				_ = procgroup.Signal(h.cmd.Process.Pid, procgroup.Thaw)
				_ = h.cmd.Process.Kill()
				<-h.exited
			}
		})
	}
	cfg, err := os.ReadFile(filepath.Join(testkit.RepoRoot(t), "deploy", "haproxy.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	c.lb = testkit.HAProxy(t, string(cfg), backends).URL
	c.balanced(t)
	return c
}

// balanced starts any host a probe before stopped and waits until round
// robin names every host: the balancer has checked them all ready.
func (c *cluster) balanced(t *testing.T) {
	t.Helper()
	for _, h := range c.hosts {
		h.ensure()
	}
	if err := testkit.WaitFor(20*time.Second, func() error {
		seen := map[string]bool{}
		for range 6 {
			resp, err := http.Get(c.lb + "/ready")
			if err != nil {
				return err
			}
			resp.Body.Close()
			seen[resp.Header.Get("X-Meridian-Host")] = true
		}
		if len(seen) != 3 {
			return fmt.Errorf("the balancer reaches %d hosts", len(seen))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

func freePort(t *testing.T, ip string) int {
	t.Helper()
	l, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// client bounds every probe's request: a build that hangs fails its
// probe instead of the matrix.
func client() *http.Client { return &http.Client{Timeout: time.Minute} }

// post sends a JSON body to url+path with header pairs and reads the
// whole answer.
func post(url, path, body string, header ...string) (*http.Response, string, error) {
	req, err := http.NewRequest(http.MethodPost, url+path, strings.NewReader(body))
	if err != nil {
		return nil, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := client().Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, string(b), err
}

// stream sends a streamed request and hands each line of its answer to
// see, which may act on it; it returns the status, every line, and the
// read's end.
func stream(url, path, body string, see func(line string), header ...string) (int, []string, error) {
	req, err := http.NewRequest(http.MethodPost, url+path, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := client().Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var lines []string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if see != nil {
			see(sc.Text())
		}
	}
	return resp.StatusCode, lines, sc.Err()
}

// turnsOf makes alternate turns, the user's first, into the messages (or
// input items) of a body.
func turnsOf(turns []string) []map[string]string {
	var out []map[string]string
	for i, text := range turns {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		out = append(out, map[string]string{"role": role, "content": text})
	}
	return out
}

func messagesBody(stream bool, turns ...string) string {
	b, _ := json.Marshal(map[string]any{"model": "test-model", "max_tokens": 100, "stream": stream, "messages": turnsOf(turns)})
	return string(b)
}

func chatBody(stream bool, turns ...string) string {
	b, _ := json.Marshal(map[string]any{"model": "test-model", "stream": stream, "messages": turnsOf(turns)})
	return string(b)
}

func responsesBody(stream, background bool, turns ...string) string {
	b, _ := json.Marshal(map[string]any{"model": "test-model", "stream": stream, "background": background, "input": turnsOf(turns)})
	return string(b)
}

// waitUpstream waits until the upstream has had a request whose last user
// message holds text.
func (c *cluster) waitUpstream(t *testing.T, text string) {
	t.Helper()
	if err := testkit.WaitFor(20*time.Second, func() error {
		if c.upstreamHad(text) == 0 {
			return errors.New("not yet")
		}
		return nil
	}); err != nil {
		t.Fatalf("no request with %q reached the upstream", text)
	}
}

func (c *cluster) upstreamHad(text string) int {
	n := 0
	for _, r := range c.up.Requests() {
		if strings.Contains(r.LastUserText(), text) {
			n++
		}
	}
	return n
}
