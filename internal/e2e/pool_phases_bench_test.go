package e2e

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// poolFigures are one side's measurements.
type poolFigures struct {
	firstTurn time.Duration // median first turn of a new conversation, at low load
	pss       int64         // whole tree after the one-offs and the settle time
	alive     int           // claude processes then
	cpuIdle   float64       // worst idle window after the settle time, % of a core
	cpuRefill float64       // the window from the burst's end, which holds its refill
	afterIdle time.Duration // median wall of 10 new conversations after idle
	spared    int           // the fewest of them a spare answered, in any run
	cold      time.Duration // median wall of 10 more right after them
	working   []time.Duration
	closed    int           // active conversations resumed in a new process
	eleventh  time.Duration // an 11th new conversation's first turn after them
	restart   time.Duration // median first turn after a restart on a used data dir
}

// cpuSeries samples the tree's CPU once a second for n seconds: the ticks
// (1/100 s) each second used, counting processes started meanwhile whole
// and those that exited (a closed CLI spends up to ~0.15 s exiting).
func (g *gatewayProc) cpuSeries(n int) []int {
	out := make([]int, 0, n)
	prev := g.treeTicks()
	for range n {
		time.Sleep(time.Second)
		cur := g.treeTicks()
		out = append(out, cur-prev)
		prev = cur
	}
	return out
}

// windows is the CPU of every w-second window of a series, in percent of
// a core (ticks per second).
func windows(series []int, w int) []float64 {
	var out []float64
	for i := 0; i+w <= len(series); i++ {
		sum := 0
		for _, t := range series[i : i+w] {
			sum += t
		}
		out = append(out, float64(sum)/float64(w))
	}
	return out
}

// onePhase are the first turns at low load, and the one-off prompts with
// the memory and CPU after them.
func onePhase(b *testing.B, sd benchSide, runs, oneOffs, idle int, f *poolFigures) {
	settle := settleTime()
	g := fresh(b, sd)
	g.timed(b, prompt("warm-up"), "X-Claude-Code-Session-Id", "warm-up")
	var firsts []time.Duration
	for i := range runs {
		waitSpares(g, 1)
		time.Sleep(settle / 5)
		firsts = append(firsts, g.timed(b, prompt(fmt.Sprintf("first turn %d", i)), "X-Claude-Code-Session-Id", fmt.Sprintf("first-%d", i)))
	}
	f.firstTurn = testkit.Median(firsts)
	stop(g)

	// One-off prompts (no session id, each its own first message), then
	// the tree's CPU second by second: the first window holds the refill
	// after the burst, the later ones are idle.
	g = fresh(b, sd)
	for i := range oneOffs {
		g.timed(b, prompt(fmt.Sprintf("one-off %d", i)))
	}
	wait := int(settle / time.Second)
	series := g.cpuSeries(wait)
	f.pss, f.alive = g.treePSS(), len(g.claudes())
	series = append(series, g.cpuSeries(2*idle)...)
	b.Logf("%s, after %d one-offs: the tree's CPU each second (ticks): %v", sd.name, oneOffs, series)
	f.cpuRefill = windows(series, idle)[0]
	f.cpuIdle = slices.Max(windows(series[wait:], idle))
	stop(g)
}

// burstPhase measures both sides at once, their bursts interleaved so
// that each side idles `idle` seconds before each of its own: ten new
// conversations at once after idle, then ten more at once right after
// them (cold: no idle for spares to be made in).
func burstPhase(b *testing.B, sides map[string]benchSide, order []string, n, runs, idle int, got map[string]*poolFigures) {
	gs := map[string]*gatewayProc{}
	last := map[string]time.Time{}
	for i, side := range order {
		g := fresh(b, sides[side])
		defer stop(g)
		gs[side] = g
		g.timed(b, prompt("warm-up"), "X-Claude-Code-Session-Id", "warm-up")
		waitSpares(g, 1)
		g.burst(b, "teach", n, 1) // the first burst shows the demand
		last[side] = time.Now().Add(time.Duration(i) * time.Duration(idle) * time.Second / time.Duration(len(order)))
	}
	walls, colds := map[string][]time.Duration{}, map[string][]time.Duration{}
	for i := range runs {
		for _, side := range order {
			g := gs[side]
			time.Sleep(time.Until(last[side].Add(time.Duration(idle) * time.Second)))
			wall, spared, _ := g.burst(b, fmt.Sprintf("idle-%d", i), n, 1)
			cold, _, _ := g.burst(b, fmt.Sprintf("cold-%d", i), n, 1)
			last[side] = time.Now()
			walls[side], colds[side] = append(walls[side], wall), append(colds[side], cold)
			if i == 0 || spared < got[side].spared {
				got[side].spared = spared
			}
		}
	}
	for _, side := range order {
		got[side].afterIdle, got[side].cold = testkit.Median(walls[side]), testkit.Median(colds[side])
	}
}

// workingPhase keeps ten conversations active: they start at once, then
// send their next turns at once, round after round; a conversation whose
// answering session changes was closed (by the memory bound) and resumed.
// Then an 11th new conversation.
func workingPhase(b *testing.B, sd benchSide, n, rounds int, f *poolFigures) {
	settle := settleTime()
	g := fresh(b, sd)
	defer stop(g)
	g.timed(b, prompt("warm-up"), "X-Claude-Code-Session-Id", "warm-up")
	waitSpares(g, 1)
	_, _, sessions := g.burst(b, "work", n, 1)
	// The spares the burst asks for are made (one a second) and have
	// finished their start-up work (a new CLI's first 30 s): the rounds
	// measure ten active conversations, not the refill after their start.
	time.Sleep(3 * settle)
	for r := range rounds {
		time.Sleep(settle * 6 / 10) // the user reads
		t0, own0 := g.treeTicks(), testkit.CPUTicks(g.cmd.Process.Pid)
		wall, _, now := g.burst(b, "work", n, r+2)
		t1, own1 := g.treeTicks(), testkit.CPUTicks(g.cmd.Process.Pid)
		own := own1 - own0
		cli := t1 - t0 - own
		b.Logf("%s, round %d: %v wall; CPU: meridian %d ticks, its claudes %d", sd.name, r+1, wall.Round(time.Millisecond), own, cli)
		f.working = append(f.working, wall)
		for j := range now {
			if now[j] != sessions[j] {
				f.closed++
			}
		}
		sessions = now
	}
	time.Sleep(settle / 2)
	f.eleventh = g.timed(b, prompt("the eleventh"), "X-Claude-Code-Session-Id", "eleventh")
}

// restartPhase times the first new conversation after each restart on a
// data dir that has served one before. Without recall (the "today" side:
// nothing read the start log before it) each restart gets an empty data
// dir instead, which is what the start log then holds.
func restartPhase(b *testing.B, sd benchSide, runs int, recall bool, f *poolFigures) {
	settle := settleTime()
	g := fresh(b, sd)
	g.timed(b, prompt("before the restarts"), "X-Claude-Code-Session-Id", "seed")
	time.Sleep(2 * time.Second) // the start is recorded off the request path
	stop(g)
	var firsts []time.Duration
	for i := range runs {
		if !recall {
			g.dataDir = b.TempDir()
		}
		g.start(sd.args...)
		time.Sleep(settle / 2) // a spare, if any, has booted
		firsts = append(firsts, g.timed(b, prompt(fmt.Sprintf("after restart %d", i)), "X-Claude-Code-Session-Id", fmt.Sprintf("restart-%d", i)))
		stop(g)
	}
	f.restart = testkit.Median(firsts)
}

// BenchmarkPool measures, side by side in one run against one fake
// upstream, the live pool with its defaults (spares sized by demand, the
// memory bound from the machine, a spare at start) and with the settings
// before them ("today": one spare, a 1 GiB bound): first turns, the memory
// and CPU of the whole tree after a burst of one-off prompts, ten new
// conversations at once after idle and right after, ten active
// conversations' next turns at once and an 11th new one, the first
// turn after a restart, and the refill after a burst (the tree's CPU over
// the idle after ten new conversations, and the next ten's wall), also
// with a CPU budget for the spares (--spare-cpu 1). MERIDIAN_BENCH_RUNS (default 1),
// MERIDIAN_BENCH_ONE_OFFS (default 8) and MERIDIAN_BENCH_IDLE seconds
// (default 3: the CPU window, and the idle before a burst) size it;
// ./scripts/bench runs 10, 40 and 60. MERIDIAN_BENCH_SETTLE seconds
// (default 10) are its pauses between phases. MERIDIAN_BENCH_NOW_ARGS adds
// flags to the "now" side, to try settings; MERIDIAN_BENCH_PHASES names
// the phases to run (one-offs, bursts, working, restart; default all);
// MERIDIAN_BENCH_BURST is a burst's size (default 10);
// MERIDIAN_BENCH_TODAY_BIN runs the "today" side on another meridian
// binary (./scripts/bench builds the commit before idle processes yielded
// to turns), where the flags alone cannot bring back the old behaviour;
// MERIDIAN_BENCH_TODAY_ARGS replaces its flags and MERIDIAN_BENCH_NOW_BIN
// names the "now" side's binary, so that two builds with the same flags
// can be measured side by side.
func BenchmarkPool(b *testing.B) {
	runs, idle := benchEnv("MERIDIAN_BENCH_RUNS", 1), benchEnv("MERIDIAN_BENCH_IDLE", 3)
	oneOffs := benchEnv("MERIDIAN_BENCH_ONE_OFFS", 8)
	n := benchEnv("MERIDIAN_BENCH_BURST", 10)
	sides := map[string]benchSide{
		"now":   {name: "now", args: strings.Fields(os.Getenv("MERIDIAN_BENCH_NOW_ARGS")), bin: os.Getenv("MERIDIAN_BENCH_NOW_BIN")},
		"today": {name: "today", args: []string{"--spares", "1", "--spares-max", "1", "--live-memory", "1024"}, bin: os.Getenv("MERIDIAN_BENCH_TODAY_BIN")},
	}
	if a, ok := os.LookupEnv("MERIDIAN_BENCH_TODAY_ARGS"); ok {
		sd := sides["today"]
		sd.args = strings.Fields(a)
		sides["today"] = sd
	}
	order := []string{"today", "now"}
	// The refill after a burst: the defaults, with a CPU budget for the
	// spares, and one spare (today's), each alone.
	budget := sides["now"]
	budget.name, budget.args = "budget", append(slices.Clone(budget.args), "--spare-cpu", "1")
	refillSides := []benchSide{sides["now"], budget, sides["today"]}
	var refills map[string]*refillFigures

	got := map[string]*poolFigures{"now": {}, "today": {}}
	phases := strings.Fields(strings.ReplaceAll(os.Getenv("MERIDIAN_BENCH_PHASES"), ",", " "))
	run := func(name string) bool { return len(phases) == 0 || slices.Contains(phases, name) }
	for i := 0; i < b.N; i++ {
		for _, side := range order {
			if run("one-offs") {
				onePhase(b, sides[side], runs, oneOffs, idle, got[side])
			}
		}
		if run("bursts") {
			burstPhase(b, sides, order, n, runs, idle, got)
		}
		if run("refill") {
			refills = refillPhase(b, refillSides, n, benchEnv("MERIDIAN_BENCH_REFILL_RUNS", min(runs, 3)), idle)
		}
		for _, side := range order {
			if run("working") {
				workingPhase(b, sides[side], n, runs, got[side])
			}
			if run("restart") {
				restartPhase(b, sides[side], runs, side == "now", got[side])
			}
		}
	}
	for _, side := range order {
		f, sfx := got[side], "-"+side
		b.ReportMetric(testkit.Millis(f.firstTurn), "first-turn-ms"+sfx)
		b.ReportMetric(float64(f.pss>>20), "tree-pss-MiB"+sfx)
		b.ReportMetric(float64(f.alive), "claude-alive"+sfx)
		b.ReportMetric(f.cpuIdle, "idle-cpu-worst-%core"+sfx)
		b.ReportMetric(f.cpuRefill, "refill-window-cpu-%core"+sfx)
		b.ReportMetric(testkit.Millis(f.afterIdle), fmt.Sprintf("%d-new-after-idle-ms", n)+sfx)
		b.ReportMetric(float64(f.spared), fmt.Sprintf("%d-new-after-idle-by-spares", n)+sfx)
		b.ReportMetric(testkit.Millis(f.cold), fmt.Sprintf("%d-new-cold-ms", n)+sfx)
		if len(f.working) > 0 {
			b.ReportMetric(testkit.Millis(testkit.Median(f.working)), fmt.Sprintf("%d-active-next-median-ms", n)+sfx)
			b.ReportMetric(testkit.Millis(slices.Max(f.working)), fmt.Sprintf("%d-active-next-worst-ms", n)+sfx)
		}
		b.ReportMetric(float64(f.closed), fmt.Sprintf("%d-active-closed", n)+sfx)
		b.ReportMetric(testkit.Millis(f.eleventh), "11th-new-ms"+sfx)
		b.ReportMetric(testkit.Millis(f.restart), "first-after-restart-ms"+sfx)
	}
	for _, sd := range refillSides {
		if f := refills[sd.name]; f != nil {
			b.ReportMetric(slices.Max(f.cpu), "refill-after-burst-cpu-worst-%core-"+sd.name)
			b.ReportMetric(testkit.Millis(testkit.Median(f.next)), fmt.Sprintf("refill-then-%d-new-ms-", n)+sd.name)
			b.ReportMetric(float64(f.spared), fmt.Sprintf("refill-then-%d-new-by-spares-", n)+sd.name)
			b.ReportMetric(float64(testkit.Median(f.next))/float64(testkit.Median(refills["today"].next)), "refill-then-burst-ratio-"+sd.name)
		}
	}
	if got["today"].afterIdle > 0 {
		b.ReportMetric(float64(got["now"].afterIdle)/float64(got["today"].afterIdle), fmt.Sprintf("%d-new-after-idle-ratio", n))
		b.ReportMetric(float64(got["now"].cold)/float64(got["today"].cold), fmt.Sprintf("%d-new-cold-ratio", n))
	}
}

// refillFigures are one side's refill after a burst.
type refillFigures struct {
	cpu    []float64       // the tree's CPU over the idle after each burst, % of a core
	next   []time.Duration // the next burst's wall after that idle
	spared int             // the fewest of the next burst's a spare answered
}

// refillPhase measures what refilling the spares after a burst costs and
// buys: ten new conversations at once, then the tree's CPU over the
// `idle` seconds after them (the window that holds the refill), then ten
// new conversations at once again. Each side runs alone, one after
// another, so none competes for the cores with another's refill.
func refillPhase(b *testing.B, sides []benchSide, n, runs, idle int) map[string]*refillFigures {
	got := map[string]*refillFigures{}
	for r := range runs {
		for _, sd := range sides {
			f := got[sd.name]
			if f == nil {
				f = &refillFigures{spared: n}
				got[sd.name] = f
			}
			g := fresh(b, sd)
			g.timed(b, prompt("warm-up"), "X-Claude-Code-Session-Id", "warm-up")
			waitSpares(g, 1)
			g.burst(b, fmt.Sprintf("first-%d", r), n, 1)
			series := g.cpuSeries(idle)
			wall, spared, _ := g.burst(b, fmt.Sprintf("next-%d", r), n, 1)
			stop(g)
			cpu := windows(series, idle)[0]
			b.Logf("%s, run %d: the tree's CPU each second after a burst of %d (ticks): %v = %.2f %% of a core; the next burst %v, %d by spares",
				sd.name, r+1, n, series, cpu, wall.Round(time.Millisecond), spared)
			f.cpu, f.next = append(f.cpu, cpu), append(f.next, wall)
			f.spared = min(f.spared, spared)
		}
	}
	return got
}
