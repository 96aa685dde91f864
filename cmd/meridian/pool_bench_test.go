package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/procmem"
	"github.com/meridian-gw/meridian/internal/testkit"
)

// benchEnv reads a count or a duration in seconds for the pool benchmark:
// ./scripts/bench sets full figures; a plain `go test -bench` runs short.
func benchEnv(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// treePSS is the proportional memory of meridian and every claude it runs.
func (g *gatewayProc) treePSS() int64 {
	var total int64
	for _, pid := range append(g.claudes(), g.cmd.Process.Pid) {
		if n, ok := procmem.Process(pid); ok {
			total += n
		}
	}
	return total
}

// treeTicks is the CPU time of meridian and its live claude processes,
// each with its exited children's: spent counts the tree between two.
func (g *gatewayProc) treeTicks() map[int]int {
	out := map[int]int{}
	for _, pid := range append(g.claudes(), g.cmd.Process.Pid) {
		out[pid] = testkit.CPUTicksReaped(pid)
	}
	return out
}

// spent is the tree's CPU from prev to cur. A process gone since prev
// took its whole time to its parent's count of exited children, so what
// prev had counted of it is taken back out; until its parent waits for
// it, that can make one interval short and the next long.
func spent(prev, cur map[int]int) int {
	used := 0
	for pid, t := range cur {
		used += t - prev[pid]
	}
	for pid, t := range prev {
		if _, ok := cur[pid]; !ok {
			used -= t
		}
	}
	return used
}

// timed sends a prompt and returns how long its answer took.
func (g *gatewayProc) timed(b testing.TB, body string, header ...string) time.Duration {
	d, _ := g.timedSession(b, body, header...)
	return d
}

// timedSession is timed, with the CLI session that answered.
func (g *gatewayProc) timedSession(b testing.TB, body string, header ...string) (time.Duration, string) {
	t0 := time.Now()
	resp, answer, err := g.post(body, header...)
	if err != nil || resp.StatusCode != 200 {
		b.Fatalf("request: %v %s", err, answer)
	}
	return time.Since(t0), resp.Header.Get("X-Meridian-Session-Id")
}

// sessionPid finds the claude process running a CLI session: its id is
// on the command line.
func (g *gatewayProc) sessionPid(session string) int {
	for _, pid := range g.claudes() {
		argv, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if strings.Contains(string(argv), "--session-id="+session) {
			return pid
		}
	}
	return 0
}

func (g *gatewayProc) spares() int {
	resp, err := httpGet(g.url + "/inflight")
	if err != nil {
		return 0
	}
	i := strings.Index(resp, `"spare_processes":`)
	if i < 0 {
		return 0
	}
	n, _ := strconv.Atoi(strings.Trim(strings.SplitN(resp[i+len(`"spare_processes":`):], ",", 2)[0], "} "))
	return n
}

// fresh starts a gateway of one side for one phase of the measurement.
// benchSide is how one side of the benchmark runs meridian: its flags, and
// its binary when not the one under test.
type benchSide struct {
	name string
	args []string
	bin  string
}

func fresh(b *testing.B, sd benchSide) *gatewayProc {
	g := newGateway(b)
	if sd.bin != "" {
		g.bin = sd.bin
	}
	g.up.Always(testkit.Reply{Text: "ok"})
	g.start(sd.args...)
	return g
}

func stop(g *gatewayProc) {
	_ = g.cmd.Process.Signal(syscall.SIGTERM)
	_ = g.cmd.Wait()
}

// waitSpares waits until n spares wait (at most 30 s: a side that keeps
// fewer measures with what it has).
func waitSpares(g *gatewayProc, n int) {
	_ = testkit.WaitFor(30*time.Second, func() error {
		if got := g.spares(); got < n {
			return fmt.Errorf("%d spares, want %d", got, n)
		}
		return nil
	})
}

// settleTime is how long the pool benchmark lets things settle between
// phases (10 s; MERIDIAN_BENCH_SETTLE seconds): the figures need it, a
// pass that only checks the benchmark still runs does not.
func settleTime() time.Duration {
	return time.Duration(benchEnv("MERIDIAN_BENCH_SETTLE", 10)) * time.Second
}

// nthTurn is a conversation's request for turn n (1-based): its first
// prompt, then the fake upstream's answers and the prompts after it.
func nthTurn(first string, n int) string {
	msgs := []string{fmt.Sprintf(`{"role":"user","content":%q}`, first)}
	for i := 2; i <= n; i++ {
		msgs = append(msgs, `{"role":"assistant","content":"ok"}`, fmt.Sprintf(`{"role":"user","content":"turn %d"}`, i))
	}
	return `{"model":"test-model","max_tokens":100,"messages":[` + strings.Join(msgs, ",") + `]}`
}

// secondTurn is a conversation's second request.
func secondTurn(first string) string { return nthTurn(first, 2) }

// burst sends turn n of conversations name-0 … name-(count-1) at once
// (n = 1: new conversations); it returns the wall time, how many were
// answered by a process that was waiting before the burst (for new
// conversations: a spare), and the CLI session that answered each.
func (g *gatewayProc) burst(b *testing.B, name string, count, n int) (time.Duration, int, []string) {
	before := g.claudes()
	var wg sync.WaitGroup
	sessions := make([]string, count)
	t0 := time.Now()
	for j := range count {
		wg.Go(func() {
			key := fmt.Sprintf("%s-%d", name, j)
			_, sessions[j] = g.timedSession(b, nthTurn(key, n), "X-Claude-Code-Session-Id", key)
		})
	}
	wg.Wait()
	wall := time.Since(t0)
	waiting := 0
	for _, s := range sessions {
		if slices.Contains(before, g.sessionPid(s)) {
			waiting++
		}
	}
	return wall, waiting, sessions
}

func httpGet(url string) (string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// A process that exited between two samples is counted once: what was
// counted of it before moves into its parent's reaped count.
func TestSpentCountsAnExitedProcessOnce(t *testing.T) {
	prev := map[int]int{1: 100, 2: 40}
	if got := spent(prev, map[int]int{1: 100 + 5 + 45}); got != 10 {
		t.Fatalf("parent 5 more, child 40 → 45 then reaped: got %d, want 10", got)
	}
	if got := spent(prev, map[int]int{1: 105, 2: 40, 3: 7}); got != 12 {
		t.Fatalf("a new process counts whole: got %d, want 12", got)
	}
}
