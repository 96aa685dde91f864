package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
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

// treeTicks is the CPU time meridian and its claude processes have used:
// meridian's own with what its reaped children used, and every child not
// yet reaped, running or exited. A child's time moves into meridian's
// reaped count the moment meridian waits for it, so the total only grows
// and a closed CLI's exit counts in the second it happened; a sample that
// a reap fell into is taken again.
func (g *gatewayProc) treeTicks() int {
	if g.seen == nil {
		g.seen = map[int]bool{}
	}
	return treeTicks(g.cmd.Process.Pid, g.seen, g.claudes)
}

// treeTicks totals the CPU of process self and of its children that
// list names or seen holds, until each is reaped (see the method).
func treeTicks(self int, seen map[int]bool, list func() []int) int {
	for {
		before := reapedTicks(testkit.StatFields(self))
		for _, pid := range list() {
			seen[pid] = true
		}
		kids := 0
		for pid := range seen {
			if f := testkit.StatFields(pid); f == nil {
				delete(seen, pid) // reaped: its time is in its parent's count
			} else {
				kids += testkit.CPUTicksReaped(pid)
			}
		}
		if after := testkit.StatFields(self); reapedTicks(after) == before {
			return testkit.CPUTicks(self) + before + kids
		}
	}
}

// reapedTicks is what a process's waited-for children used, from its stat
// fields (cutime and cstime).
func reapedTicks(f []string) int {
	if len(f) < 15 {
		return 0
	}
	a, _ := strconv.Atoi(f[13])
	b, _ := strconv.Atoi(f[14])
	return a + b
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

// A child's CPU counts once, whether it runs, has exited unreaped or has
// been waited for: the tree's total never falls as its CLIs close.
func TestTreeTicksKeepsAnExitedChildOnce(t *testing.T) {
	cmd := exec.Command("sh", "-c", "i=0; while [ $i -lt 400000 ]; do i=$((i+1)); done")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	self, seen := os.Getpid(), map[int]bool{}
	kids := func() []int { return []int{cmd.Process.Pid} }
	samples := []int{treeTicks(self, seen, kids)}
	// Exited but not yet waited for: a zombie, which the CLI list leaves
	// out and seen keeps.
	for testkit.StatFields(cmd.Process.Pid)[0] != "Z" {
		samples = append(samples, treeTicks(self, seen, kids))
		time.Sleep(10 * time.Millisecond)
	}
	none := func() []int { return nil }
	zombie := treeTicks(self, seen, none)
	childCPU := testkit.CPUTicks(cmd.Process.Pid)
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	samples = append(samples, zombie, treeTicks(self, seen, none))
	for i := 1; i < len(samples); i++ {
		if samples[i] < samples[i-1] {
			t.Fatalf("the total fell from %d to %d (samples %v)", samples[i-1], samples[i], samples)
		}
	}
	if childCPU < 10 || samples[len(samples)-1]-samples[0] < childCPU {
		t.Fatalf("the child used %d ticks, the total grew %d", childCPU, samples[len(samples)-1]-samples[0])
	}
}
