package gateway

import (
	"context"
	"encoding/json"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/meridian-gw/meridian/internal/backend"
	"github.com/meridian-gw/meridian/internal/pool"
	"github.com/meridian-gw/meridian/internal/procmem"
	"github.com/meridian-gw/meridian/internal/spareplan"
)

// Spare sizing.
const (
	// DefaultSparesMin is how many spare processes wait by default when no
	// burst asks for more.
	DefaultSparesMin = 1
	// SpareMemory is what a waiting spare holds, for the room check before
	// one is started (measured: ~95 MiB PSS before its first turn).
	SpareMemory = 128 << 20
	// minAvailable is the memory the machine must have free for a spare
	// to be started: spares are a luxury, never a cause of pressure.
	minAvailable = 1 << 30
	// recentStarts is how many recent new-process starts choose the
	// contract spares are kept for at least.
	recentStarts = 16
)

// Pacing of the spare worker.
const (
	// refillDelay lets the turn that used a spare (or started a process)
	// run before a replacement competes with it for CPU.
	refillDelay = 500 * time.Millisecond
	// spareBoot is how long a spare's start keeps a core busy (measured:
	// 0.6–0.8 s of CPU in its first second); the next starts after it, so
	// a refill never takes every core from a turn that arrives meanwhile.
	spareBoot = time.Second
	// busyRetry is how soon a refill held back by running turns looks again.
	busyRetry = 250 * time.Millisecond
	// staleIdle is how long a conversation has been idle before a spare
	// above the minimum may take its place.
	staleIdle = time.Minute
	// startUpWork is how long a new CLI keeps doing its start-up work on
	// its own timers (measured: most in its first second, the rest within
	// 30 s).
	startUpWork = 30 * time.Second
	// replan is how often the worker looks again with nothing happening:
	// a burst's demand decays, and the spares beyond it close.
	replan = time.Minute
)

// spares keeps processes started ahead of need, so that a new
// conversation's first turn skips the CLI's start: at least SparesMin for
// the start-time contract recent new conversations used most, and as many
// as recent bursts of new conversations ran at once for each contract, at
// most SparesMax in all (spareplan decides). One background worker starts
// and closes them, in idle time, never a request.
type spares struct {
	// last is the latest start beyond the minimum, for the CPU budget:
	// when it began, and its process. The worker's own.
	last struct {
		at   time.Time
		pid  int
		cost time.Duration // its CPU as last read
	}
	mu      sync.Mutex
	recent  []backend.StartOptions          // the start-time options of recent starts
	demand  spareplan.Demand                // first turns running at once, per contract
	options map[string]backend.StartOptions // the latest options of each contract
	kick    chan struct{}                   // wakes the worker
	wg      sync.WaitGroup
	// unrecorded are the starts the worker has yet to count in StartLog.
	unrecorded []backend.StartOptions
}

// StartLog remembers the start-time options new conversations used
// (store.Starts), by contract.
type StartLog interface {
	Record(ctx context.Context, profile, contract string, options []byte, at time.Time) error
	Top(ctx context.Context, profile string, since time.Time) ([]byte, bool, error)
}

// startMemory is how far back the start log is read at start.
const startMemory = 7 * 24 * time.Hour

// startKey digests the options a process must be started with: a spare
// serves only a conversation whose options give the same key. The system
// prompt, tools and output schema come later (Bind); the CLI's own tool
// list (web search) is on its command line; resumes never use spares.
func startKey(o backend.StartOptions) string {
	return digest(append([]string{o.Model, o.Dir, strconv.Itoa(o.MaxOutputTokens), strconv.Itoa(int(o.Thinking.Mode)),
		strconv.Itoa(o.Thinking.Budget), o.Effort}, webSearchKey(o.WebSearch)...)...)
}

// startOnly is what of a conversation's options a spare is started with.
func startOnly(o backend.StartOptions) backend.StartOptions {
	o.System, o.Tools, o.JSONSchema, o.Resume, o.ResumeAt, o.SessionID = nil, nil, nil, "", "", ""
	return o
}

// sparesOn reports whether this gateway keeps spares at all.
func (g *Gateway) sparesOn() bool { return g.spares.kick != nil }

// arrive records a new conversation's first turn for the spares' demand;
// the function it returns records its end.
func (g *Gateway) arrive(opts backend.StartOptions) func() {
	if !g.sparesOn() {
		return func() {}
	}
	key, s := startKey(opts), &g.spares
	s.mu.Lock()
	s.demand.Arrive(key, g.cfg.Now())
	s.options[key] = startOnly(opts)
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		s.demand.Leave(key)
		s.mu.Unlock()
		g.kickSpares() // a turn ended: a held-back refill may go on
	}
}

// takeSpare gives a fresh conversation a spare of its start-time contract,
// bound to its system prompt and tools, or nil.
func (g *Gateway) takeSpare(opts backend.StartOptions, key string) *pool.Live {
	if !g.sparesOn() || opts.Resume != "" {
		return nil
	}
	l := g.pool.TakeSpare(startKey(opts), key)
	if l == nil {
		return nil
	}
	b, ok := l.Session.(backend.Binder)
	if !ok || b.Bind(opts) != nil {
		g.pool.Discard(l)
		return nil
	}
	g.refill(opts)
	return l
}

// refill records a new conversation's start-time options and wakes the
// spare worker.
func (g *Gateway) refill(opts backend.StartOptions) {
	if !g.sparesOn() {
		return
	}
	s := &g.spares
	s.mu.Lock()
	s.recent = append(s.recent, startOnly(opts))
	if g.cfg.Starts != nil && len(s.unrecorded) < recentStarts {
		s.unrecorded = append(s.unrecorded, startOnly(opts))
	}
	if len(s.recent) > recentStarts {
		s.recent = s.recent[len(s.recent)-recentStarts:]
	}
	s.mu.Unlock()
	g.kickSpares()
}

func (g *Gateway) kickSpares() {
	select {
	case g.spares.kick <- struct{}{}:
	default:
	}
}

// sparePlan is how many spares each contract should have now, with the
// options to start them.
func (g *Gateway) sparePlan() (map[string]int, map[string]backend.StartOptions) {
	s := &g.spares
	s.mu.Lock()
	defer s.mu.Unlock()
	top, topKey := mostUsed(s.recent)
	opts := map[string]backend.StartOptions{}
	if topKey != "" {
		opts[topKey] = top
	}
	wants := s.demand.Wants(g.cfg.Now())
	for k := range wants {
		if o, ok := s.options[k]; ok {
			opts[k] = o
		}
	}
	for k := range s.options {
		if _, ok := wants[k]; !ok && k != topKey {
			delete(s.options, k) // its demand is forgotten
		}
	}
	return spareplan.Plan(wants, topKey, spareplan.Limits{Min: g.cfg.SparesMin, Max: g.cfg.SparesMax}), opts
}

// keepSpares is the spare worker. On each kick, and every replan, it
// closes the spares the plan no longer wants and starts, one at a time
// and only in idle time, what the plan lacks.
func (g *Gateway) keepSpares(b backend.SpareBackend) {
	tick := time.NewTicker(replan)
	defer tick.Stop()
	if g.recall() {
		g.kickSpares()
	}
	for {
		select {
		case <-g.closing.Done():
			return
		case <-g.spares.kick:
		case <-tick.C:
		}
		if !g.pause(refillDelay) {
			return
		}
		g.record()
		for g.closing.Err() == nil {
			plan, opts := g.sparePlan()
			if total := sum(plan); total != g.planned {
				g.log.Debug("spares planned", "spares", total, "contracts", len(plan))
				g.planned = total
			}
			g.pool.TrimSpares(plan)
			key, short := g.lacking(plan)
			if _, known := opts[key]; !known {
				break // nothing lacks (or its options are forgotten)
			}
			if ok, why := spareplan.MayStart(g.machine()); !ok {
				g.log.Debug("holding back a spare "+g.cfg.CLI.Name+" process", "why", why)
				if !g.pause(busyRetry) {
					return
				}
				continue
			}
			if wait := g.budgetWait(short); wait > 0 {
				g.log.Debug("holding back a spare "+g.cfg.CLI.Name+" process", "why", "the spares' CPU budget", "for", wait)
				if !g.pause(min(wait, replan)) {
					return
				}
				continue
			}
			if !g.roomForSpare(short) {
				break
			}
			sess, err := b.StartSpare(g.closing, opts[key])
			if err != nil {
				g.pool.Release()
				g.log.Debug("could not start a spare "+g.cfg.CLI.Name+" process", "err", err)
				break
			}
			if !short {
				g.spares.last.at, g.spares.last.pid, g.spares.last.cost = g.cfg.Now(), pidOf(sess), 0
			}
			g.pool.PutSpare(&pool.Live{Session: sess, Spare: key})
			if !g.pause(spareBoot) {
				return
			}
		}
	}
}

// budgetWait is how long a spare beyond the minimum must wait under the
// spares' CPU budget: the last such start's cost, read from its process
// while it lives (its start-up work goes on after its first second),
// spread at the budget's share of a core. Below the minimum, or with no
// budget, none.
func (g *Gateway) budgetWait(belowMin bool) time.Duration {
	last := &g.spares.last
	if belowMin || g.cfg.SpareCPU <= 0 || last.at.IsZero() {
		return 0
	}
	// Read while its start-up work lasts; later its CPU may be a turn's.
	if g.cfg.Now().Sub(last.at) < startUpWork {
		if cost, ok := procmem.CPU(last.pid); ok && cost > last.cost {
			last.cost = cost
		}
	}
	cost := max(last.cost, spareBoot/2) // a process gone before it was read
	return spareplan.NextStart(last.at, cost, g.cfg.SpareCPU).Sub(g.cfg.Now())
}

// pidOf is a session's process, 0 when it has none of its own.
func pidOf(s backend.Session) int {
	if p, ok := s.(backend.Processor); ok {
		return p.Pid()
	}
	return 0
}

// recall seeds the recent starts, at start, with the options the start
// log says recent traffic used most, so the first request after a
// restart finds a spare. It reports whether there were any.
func (g *Gateway) recall() bool {
	if g.cfg.Starts == nil {
		return false
	}
	raw, ok, err := g.cfg.Starts.Top(g.closing, g.cfg.Profile, g.cfg.Now().Add(-startMemory))
	if err != nil {
		g.log.Warn("could not read which start-time options recent conversations used", "err", err)
		return false
	}
	var opts backend.StartOptions
	if !ok || json.Unmarshal(raw, &opts) != nil || (opts.Dir != "" && !dirExists(opts.Dir)) {
		return false
	}
	s := &g.spares
	s.mu.Lock()
	s.recent = append(s.recent, opts)
	s.mu.Unlock()
	return true
}

// record counts the new conversations' starts in the start log, off the
// request path.
func (g *Gateway) record() {
	s := &g.spares
	s.mu.Lock()
	todo := s.unrecorded
	s.unrecorded = nil
	s.mu.Unlock()
	for _, o := range todo {
		raw, err := json.Marshal(o)
		if err == nil {
			err = g.cfg.Starts.Record(g.closing, g.cfg.Profile, startKey(o), raw, g.cfg.Now())
		}
		if err != nil {
			g.log.Debug("could not record a conversation's start-time options", "err", err)
			return
		}
	}
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// pause waits d, or reports false when the gateway closes first.
func (g *Gateway) pause(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-g.closing.Done():
		return false
	case <-t.C:
		return true
	}
}

// lacking names a contract with fewer spares than the plan gives it, and
// whether the spares in all are below their minimum.
func (g *Gateway) lacking(plan map[string]int) (key string, belowMin bool) {
	have := g.pool.Spares()
	total := 0
	for _, n := range have {
		total += n
	}
	best := 0
	for k, n := range plan {
		short := n - have[k]
		if short > best || (short == best && short > 0 && k < key) { // the same choice each time
			key, best = k, short
		}
	}
	return key, total < g.cfg.SparesMin
}

// roomForSpare takes a place in the pool for a spare, closing an idle
// conversation's process to make room if need be: the least recently used
// one, and above the spares' minimum only one idle at least staleIdle. A
// closed conversation's next turn resumes in a new process, which costs
// about what a spare saves a new one (0.3–0.5 s against 0.35 s); so a
// spare wins over the conversation least likely to come back, and the
// spares a recent burst calls for win over conversations nobody has used
// for a minute (agents' own turns come seconds apart), never over one in
// use or more recent.
func (g *Gateway) roomForSpare(belowMin bool) bool {
	idleFor := staleIdle
	if belowMin {
		idleFor = 0
	}
	g.pool.MakeRoom(SpareMemory, idleFor)
	return g.pool.Room(SpareMemory) && g.pool.TryReserve()
}

// machine is what the machine is doing, for the idle-time rule.
func (g *Gateway) machine() spareplan.Machine {
	running, waiting, _ := g.slots.Stats()
	return spareplan.Machine{Running: running, Waiting: waiting, Cores: runtime.NumCPU(),
		Available: available(), Need: minAvailable, LastBusy: g.lastBusy(), Now: g.cfg.Now()}
}

// mostUsed picks the start-time options used most among recent starts (the
// latest of them on a tie).
func mostUsed(recent []backend.StartOptions) (backend.StartOptions, string) {
	counts := map[string]int{}
	var best backend.StartOptions
	var bestKey string
	for _, o := range recent {
		k := startKey(o)
		counts[k]++
		if counts[k] >= counts[bestKey] {
			best, bestKey = o, k
		}
	}
	return best, bestKey
}

// available is the machine's available memory in bytes (MemAvailable),
// or a large number where the system does not say.
func available() int64 {
	if n, ok := procmem.Machine("MemAvailable:"); ok {
		return n
	}
	return 1 << 62
}
