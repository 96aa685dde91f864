package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
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

// treeTicks is the CPU time of meridian and its live claude processes.
func (g *gatewayProc) treeTicks() map[int]int {
	out := map[int]int{}
	for _, pid := range append(g.claudes(), g.cmd.Process.Pid) {
		out[pid] = testkit.CPUTicks(pid)
	}
	return out
}

// timed sends a prompt and returns how long its answer took.
func (g *gatewayProc) timed(b testing.TB, body string, header ...string) time.Duration {
	t0 := time.Now()
	resp, answer, err := g.post(body, header...)
	if err != nil || resp.StatusCode != 200 {
		b.Fatalf("request: %v %s", err, answer)
	}
	return time.Since(t0)
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

// poolFigures are one side's measurements.
type poolFigures struct {
	firstTurn   time.Duration // median first turn of a new conversation, at low load
	turn2       time.Duration // a two-turn conversation's second turn, after the one-offs
	pss         int64         // whole tree after the one-offs and 10 s idle
	cpu         float64       // whole tree, percent of one core, over the idle window
	concurrent  time.Duration // median wall of 10 new conversations at once
	established time.Duration // median wall of their second turns at once
	alive       int           // claude processes after the one-offs and 10 s idle
}

// fresh starts a gateway of one side for one phase of the measurement.
func fresh(b *testing.B, args []string) *gatewayProc {
	g := newGateway(b)
	g.up.Always(testkit.Reply{Text: "ok"})
	g.start(args...)
	return g
}

func stop(g *gatewayProc) {
	_ = g.cmd.Process.Signal(syscall.SIGTERM)
	_ = g.cmd.Wait()
}

// waitSpare waits, on a gateway that keeps spares, until one waits and
// has had the time to boot (a claude takes about a second); the other side
// waits as long.
func waitSpare(g *gatewayProc, spares bool, settle time.Duration) {
	if spares {
		_ = testkit.WaitFor(10*time.Second, func() error {
			if g.spares() == 0 {
				return fmt.Errorf("no spare yet")
			}
			return nil
		})
	}
	time.Sleep(settle / 5)
}

// settleTime is how long the pool benchmark lets things settle between
// phases (10 s; MERIDIAN_BENCH_SETTLE seconds): the figures need it, a
// pass that only checks the benchmark still runs does not.
func settleTime() time.Duration {
	return time.Duration(benchEnv("MERIDIAN_BENCH_SETTLE", 10)) * time.Second
}

func measurePool(b *testing.B, args []string, runs, oneOffs, idle int, spares bool) poolFigures {
	settle := settleTime()
	var f poolFigures

	// First turns of new conversations at low load. The first
	// conversation shows the gateway which options spares need.
	g := fresh(b, args)
	g.timed(b, prompt("warm-up"), "X-Claude-Code-Session-Id", "warm-up")
	var firsts []time.Duration
	for i := range runs {
		waitSpare(g, spares, settle)
		firsts = append(firsts, g.timed(b, prompt(fmt.Sprintf("first turn %d", i)), "X-Claude-Code-Session-Id", fmt.Sprintf("first-%d", i)))
	}
	f.firstTurn = median(firsts)
	stop(g)

	// One-off prompts (no session id, each its own first message), then
	// the tree's memory after the settle time; then real two-turn conversations whose
	// second turn comes after a pause, and the CPU of everything left idle.
	g = fresh(b, args)
	for i := range oneOffs {
		g.timed(b, prompt(fmt.Sprintf("one-off %d", i)))
	}
	time.Sleep(settle)
	f.pss, f.alive = g.treePSS(), len(g.claudes())
	var seconds []time.Duration
	for i := range runs {
		key := fmt.Sprintf("two-turn-%d", i)
		g.timed(b, prompt(key+", turn 1"), "X-Claude-Code-Session-Id", key)
		time.Sleep(settle * 6 / 10) // the user reads; an idle process is frozen by now
		seconds = append(seconds, g.timed(b, secondTurn(key+", turn 1"), "X-Claude-Code-Session-Id", key))
	}
	f.turn2 = median(seconds)
	time.Sleep(settle)
	before := g.treeTicks()
	time.Sleep(time.Duration(idle) * time.Second)
	after := g.treeTicks()
	used := 0
	for pid, t := range after {
		used += t - before[pid]
	}
	f.cpu = float64(used) / float64(idle) // ticks are 1/100 s: ticks per second is percent of a core
	stop(g)

	// Ten new conversations at once, after one has shown the options.
	g = fresh(b, args)
	g.timed(b, prompt("warm-up"), "X-Claude-Code-Session-Id", "warm-up")
	var walls, established []time.Duration
	for i := range runs {
		waitSpare(g, spares, settle)
		var wg sync.WaitGroup
		t0 := time.Now()
		for j := range 10 {
			wg.Go(func() {
				g.timed(b, prompt(fmt.Sprintf("concurrent %d-%d", i, j)), "X-Claude-Code-Session-Id", fmt.Sprintf("conc-%d-%d", i, j))
			})
		}
		wg.Wait()
		walls = append(walls, time.Since(t0))

		// The same ten, established now, each send a second turn at once
		// after a pause.
		time.Sleep(settle * 6 / 10)
		t0 = time.Now()
		for j := range 10 {
			wg.Go(func() {
				key := fmt.Sprintf("conc-%d-%d", i, j)
				g.timed(b, secondTurn(fmt.Sprintf("concurrent %d-%d", i, j)), "X-Claude-Code-Session-Id", key)
			})
		}
		wg.Wait()
		established = append(established, time.Since(t0))
	}
	f.concurrent, f.established = median(walls), median(established)
	stop(g)
	return f
}

// BenchmarkPool measures, side by side in one run against one fake
// upstream, the live pool with its defaults (a warm spare, one-offs kept
// briefly, a memory bound, idle processes frozen) and with the settings
// before them (no spare, every conversation kept --idle-ttl, no bound, none
// frozen): first turns, the memory and CPU of the whole process tree after
// a burst of one-off prompts, and ten new conversations at once.
// MERIDIAN_BENCH_RUNS (default 1), MERIDIAN_BENCH_ONE_OFFS (default 8) and
// MERIDIAN_BENCH_IDLE seconds (default 3) size it; ./scripts/bench runs 10,
// 40 and 60. MERIDIAN_BENCH_SETTLE seconds (default 10) are its pauses
// between phases.
// MERIDIAN_BENCH_NOW_ARGS adds flags to the "now" side, to try settings.
func BenchmarkPool(b *testing.B) {
	runs, idle := benchEnv("MERIDIAN_BENCH_RUNS", 1), benchEnv("MERIDIAN_BENCH_IDLE", 3)
	oneOffs := benchEnv("MERIDIAN_BENCH_ONE_OFFS", 8)
	sides := map[string][]string{
		"now":    strings.Fields(os.Getenv("MERIDIAN_BENCH_NOW_ARGS")),
		"before": {"--spares", "0", "--one-off-ttl", "15m", "--live-memory", "1048576", "--freeze-idle=false"},
	}
	got := map[string]poolFigures{}
	for i := 0; i < b.N; i++ {
		for _, side := range []string{"before", "now"} {
			got[side] = measurePool(b, sides[side], runs, oneOffs, idle, side == "now")
		}
	}
	now, before := got["now"], got["before"]
	b.ReportMetric(msOf(now.firstTurn), "first-turn-ms")
	b.ReportMetric(msOf(before.firstTurn), "first-turn-before-ms")
	b.ReportMetric(msOf(now.turn2), "turn2-after-burst-ms")
	b.ReportMetric(msOf(before.turn2), "turn2-after-burst-before-ms")
	b.ReportMetric(float64(now.pss>>20), "tree-pss-MiB")
	b.ReportMetric(float64(before.pss>>20), "tree-pss-before-MiB")
	b.ReportMetric(float64(now.alive), "claude-alive")
	b.ReportMetric(float64(before.alive), "claude-alive-before")
	b.ReportMetric(now.cpu, "idle-cpu-%core")
	b.ReportMetric(before.cpu, "idle-cpu-before-%core")
	b.ReportMetric(msOf(now.concurrent), "10-new-wall-ms")
	b.ReportMetric(msOf(before.concurrent), "10-new-wall-before-ms")
	b.ReportMetric(float64(now.concurrent)/float64(before.concurrent), "10-new-wall-ratio")
	b.ReportMetric(msOf(now.established), "10-established-wall-ms")
	b.ReportMetric(msOf(before.established), "10-established-wall-before-ms")
}

// secondTurn is a conversation's second request: its first prompt, the
// fake upstream's answer, and a new prompt.
func secondTurn(first string) string {
	return fmt.Sprintf(`{"model":"test-model","max_tokens":100,"messages":[{"role":"user","content":%q},{"role":"assistant","content":"ok"},{"role":"user","content":"turn 2"}]}`, first)
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
