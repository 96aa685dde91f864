package pool

import (
	"context"
	"encoding/json"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/meridian-gw/meridian/internal/backend"
	"github.com/meridian-gw/meridian/internal/procmem"
	"github.com/meridian-gw/meridian/internal/spareplan"
)

// Spare sizing.
const (
	// SpareMemory is what a waiting spare holds, for the room check before
	// one is started (measured: ~95 MiB PSS before its first turn).
	SpareMemory = 128 << 20
	// minAvailable is the memory the machine must have free for a spare
	// to be started: spares are a luxury, never a cause of pressure.
	minAvailable = 1 << 30
	// recentStarts is how many recent new-process starts choose the
	// contract spares are kept for at least.
	recentStarts = 16
	// startMemory is how far back the start log is read at start.
	startMemory = 7 * 24 * time.Hour
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

// SpareConfig sets up the processes a pool starts ahead of need.
type SpareConfig struct {
	// Backend starts them; nil keeps no spares.
	Backend backend.SpareBackend
	// Min wait for the start-time contract recent new conversations used
	// most; more wait after bursts of new conversations, as many as ran at
	// once, Max in all (0: no spares).
	Min, Max int
	// CPU is the share of one core the starts beyond Min may use, spread
	// over time (each start's measured cost sets the wait before the
	// next); 0: no limit.
	CPU float64
	// Starts, when set, remembers the start-time options of new
	// conversations across restarts, under Profile.
	Starts  StartLog
	Profile string
	// Key digests the start-time options a spare serves: a spare serves
	// only a conversation whose options give the same key.
	Key func(backend.StartOptions) string
}

// StartLog remembers the start-time options new conversations used
// (store.Starts), by contract.
type StartLog interface {
	Record(ctx context.Context, profile, contract string, options []byte, at time.Time) error
	Top(ctx context.Context, profile string, since time.Time) ([]byte, bool, error)
}

// spareWorker keeps processes started ahead of need, so that a new
// conversation's first turn skips the CLI's start: at least Min for the
// start-time contract recent new conversations used most, and as many as
// recent bursts of new conversations ran at once for each contract, at
// most Max in all (spareplan decides). One goroutine starts and closes
// them, in idle time, never a request.
type spareWorker struct {
	p   *Pool
	cfg SpareConfig
	// last is the latest start beyond the minimum, for the CPU budget:
	// when it began, and its process. The worker's own.
	last struct {
		at   time.Time
		pid  int
		cost time.Duration // its CPU as last read
	}
	planned int // the spares last planned, for the log (the worker's own)

	mu      sync.Mutex
	recent  []backend.StartOptions          // the start-time options of recent starts
	demand  spareplan.Demand                // first turns running at once, per contract
	options map[string]backend.StartOptions // the latest options of each contract
	kick    chan struct{}                   // wakes the worker
	// unrecorded are the starts the worker has yet to count in Starts.
	unrecorded []backend.StartOptions
}

// startOnly is what of a conversation's options a spare is started with:
// the system prompt, tools and output schema come later (Bind), and
// resumes never use spares.
func startOnly(o backend.StartOptions) backend.StartOptions {
	o.System, o.Tools, o.JSONSchema, o.Resume, o.ResumeAt, o.SessionID = nil, nil, nil, "", "", ""
	return o
}

// on reports whether the pool keeps spares at all.
func (s *spareWorker) on() bool { return s != nil }

// Arrive records a new conversation's first turn for the spares' demand;
// the function it returns records its end.
func (p *Pool) Arrive(opts backend.StartOptions) func() {
	s := p.spares
	if !s.on() {
		return func() {}
	}
	key := s.cfg.Key(opts)
	s.mu.Lock()
	s.demand.Arrive(key, p.now())
	s.options[key] = startOnly(opts)
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		s.demand.Leave(key)
		s.mu.Unlock()
		s.wake() // a turn ended: a held-back refill may go on
	}
}

// started records a new conversation's start-time options and wakes the
// worker.
func (s *spareWorker) started(opts backend.StartOptions) {
	if !s.on() {
		return
	}
	s.mu.Lock()
	s.recent = append(s.recent, startOnly(opts))
	if s.cfg.Starts != nil && len(s.unrecorded) < recentStarts {
		s.unrecorded = append(s.unrecorded, startOnly(opts))
	}
	if len(s.recent) > recentStarts {
		s.recent = s.recent[len(s.recent)-recentStarts:]
	}
	s.mu.Unlock()
	s.wake()
}

func (s *spareWorker) wake() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// plan is how many spares each contract should have now, with the options
// to start them.
func (s *spareWorker) plan() (map[string]int, map[string]backend.StartOptions) {
	s.mu.Lock()
	defer s.mu.Unlock()
	top, topKey := s.mostUsed()
	opts := map[string]backend.StartOptions{}
	if topKey != "" {
		opts[topKey] = top
	}
	wants := s.demand.Wants(s.p.now())
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
	return spareplan.Plan(wants, topKey, spareplan.Limits{Min: s.cfg.Min, Max: s.cfg.Max}), opts
}

// run is the worker. On each kick, and every replan, it closes the spares
// the plan no longer wants and starts, one at a time and only in idle
// time, what the plan lacks.
func (s *spareWorker) run(ctx context.Context) {
	tick := time.NewTicker(replan)
	defer tick.Stop()
	if s.recall(ctx) {
		s.wake()
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.kick:
		case <-tick.C:
		}
		if !pause(ctx, refillDelay) {
			return
		}
		s.record(ctx)
		for ctx.Err() == nil {
			plan, opts := s.plan()
			if total := sum(plan); total != s.planned {
				s.p.log.Debug("spares planned", "spares", total, "contracts", len(plan))
				s.planned = total
			}
			s.p.TrimSpares(plan)
			key, short := s.lacking(plan)
			if _, known := opts[key]; !known {
				break // nothing lacks (or its options are forgotten)
			}
			if ok, why := spareplan.MayStart(s.machine()); !ok {
				s.p.log.Debug("holding back a spare CLI process", "why", why)
				if !pause(ctx, busyRetry) {
					return
				}
				continue
			}
			if wait := s.budgetWait(short); wait > 0 {
				s.p.log.Debug("holding back a spare CLI process", "why", "the spares' CPU budget", "for", wait)
				if !pause(ctx, min(wait, replan)) {
					return
				}
				continue
			}
			if !s.room(short) {
				break
			}
			sess, err := s.cfg.Backend.StartSpare(ctx, opts[key])
			if err != nil {
				s.p.Release()
				s.p.log.Debug("could not start a spare CLI process", "err", err)
				break
			}
			if !short {
				s.last.at, s.last.pid, s.last.cost = s.p.now(), pidOf(sess), 0
			}
			s.p.PutSpare(&Live{Session: sess, Spare: key})
			if !pause(ctx, spareBoot) {
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
func (s *spareWorker) budgetWait(belowMin bool) time.Duration {
	last := &s.last
	if belowMin || s.cfg.CPU <= 0 || last.at.IsZero() {
		return 0
	}
	// Read while its start-up work lasts; later its CPU may be a turn's.
	if s.p.now().Sub(last.at) < startUpWork {
		if cost, ok := procmem.CPU(last.pid); ok && cost > last.cost {
			last.cost = cost
		}
	}
	cost := max(last.cost, spareBoot/2) // a process gone before it was read
	return spareplan.NextStart(last.at, cost, s.cfg.CPU).Sub(s.p.now())
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
func (s *spareWorker) recall(ctx context.Context) bool {
	if s.cfg.Starts == nil {
		return false
	}
	raw, ok, err := s.cfg.Starts.Top(ctx, s.cfg.Profile, s.p.now().Add(-startMemory))
	if err != nil {
		s.p.log.Warn("could not read which start-time options recent conversations used", "err", err)
		return false
	}
	var opts backend.StartOptions
	if !ok || json.Unmarshal(raw, &opts) != nil || (opts.Dir != "" && !dirExists(opts.Dir)) {
		return false
	}
	s.mu.Lock()
	s.recent = append(s.recent, opts)
	s.mu.Unlock()
	return true
}

// record counts the new conversations' starts in the start log, off the
// request path.
func (s *spareWorker) record(ctx context.Context) {
	s.mu.Lock()
	todo := s.unrecorded
	s.unrecorded = nil
	s.mu.Unlock()
	for _, o := range todo {
		raw, err := json.Marshal(o)
		if err == nil {
			err = s.cfg.Starts.Record(ctx, s.cfg.Profile, s.cfg.Key(o), raw, s.p.now())
		}
		if err != nil {
			s.p.log.Debug("could not record a conversation's start-time options", "err", err)
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

// pause waits d, or reports false when ctx ends first.
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// lacking names a contract with fewer spares than the plan gives it, and
// whether the spares in all are below their minimum.
func (s *spareWorker) lacking(plan map[string]int) (key string, belowMin bool) {
	have := s.p.Spares()
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
	return key, total < s.cfg.Min
}

// room takes a place in the pool for a spare, closing an idle
// conversation's process to make room if need be: the least recently used
// one, and above the spares' minimum only one idle at least staleIdle. A
// closed conversation's next turn resumes in a new process, which costs
// about what a spare saves a new one (0.3–0.5 s against 0.35 s); so a
// spare wins over the conversation least likely to come back, and the
// spares a recent burst calls for win over conversations nobody has used
// for a minute (agents' own turns come seconds apart), never over one in
// use or more recent.
func (s *spareWorker) room(belowMin bool) bool {
	idleFor := staleIdle
	if belowMin {
		idleFor = 0
	}
	s.p.MakeRoom(SpareMemory, idleFor)
	return s.p.Room(SpareMemory) && s.p.TryReserve()
}

// machine is what the machine is doing, for the idle-time rule.
func (s *spareWorker) machine() spareplan.Machine {
	running, waiting := s.p.cfg.Load()
	return spareplan.Machine{Running: running, Waiting: waiting, Cores: runtime.NumCPU(),
		Available: available(), Need: minAvailable, LastBusy: s.p.lastBusy(), Now: s.p.now()}
}

// mostUsed picks the start-time options used most among recent starts
// (the latest of them on a tie). Called with mu held.
func (s *spareWorker) mostUsed() (backend.StartOptions, string) {
	counts := map[string]int{}
	var best backend.StartOptions
	var bestKey string
	for _, o := range s.recent {
		k := s.cfg.Key(o)
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

// dirExists reports whether dir is a directory on this host.
func dirExists(dir string) bool {
	st, err := os.Stat(dir)
	return err == nil && st.IsDir()
}
