// Package pool keeps backend sessions alive between the turns of their
// conversations: at most one per conversation, a bounded number in all,
// idle ones closed after a while or when room is needed. A session in use
// is never taken from its turn.
package pool

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/meridian-gw/meridian/internal/backend"
)

// Defaults for Config.
const (
	DefaultMax         = 32
	DefaultIdleTTL     = 15 * time.Minute
	DefaultOneOffTTL   = time.Minute
	DefaultMaxOneOff   = 2
	DefaultFreezeAfter = 5 * time.Second
)

// ErrFull is returned by Reserve when every live session is in use.
var ErrFull = errors.New("pool: every live session is in use")

// Live is a backend session owned by a conversation.
type Live struct {
	Key     string
	Session backend.Session
	// Contract is what the session was started with (model, system prompt,
	// execution controls); a request with another contract cannot use it.
	Contract string
	// Tools names the client tools the session offers (one digest per
	// definition).
	Tools []string
	// Version is the conversation mapping this session published, and Pin
	// where it stands: only a request that continues exactly there can use
	// it.
	Version int64
	Pin     string
	// Reported is the usage that responses of the session's paused turn
	// already reported, which the turn's final total includes.
	Reported backend.Usage
	// OneOff marks a conversation that has had one turn and carries no
	// identity of the client's: it is kept briefly, and only a few such.
	OneOff bool
	// Spare, while set, is the start-time contract of a session started
	// ahead of need and not yet any conversation's.
	Spare string

	lastUsed time.Time
	born     time.Time // when the pool first had it
	recycled int       // conversations it served after its first (TakeOneOff)
	// idleSince counts the times it went idle: a timer armed for an
	// earlier idle time does nothing.
	idleSince int
	memory    int64         // bytes, measured when it last became idle
	frozen    bool          // stopped while idle: it costs no CPU
	forTurns  bool          // frozen while turns need every core, not for its idle time: it wakes with them
	freeze    *time.Timer   // freezes it once idle a while
	gone      chan struct{} // closed once it exits, when retired (leaving.go)
}

// Config bounds a pool.
type Config struct {
	// Max bounds live sessions, idle and in use.
	Max int
	// IdleTTL closes an idle session; OneOffTTL one whose conversation is
	// a one-off, of which at most MaxOneOff are kept.
	IdleTTL   time.Duration
	OneOffTTL time.Duration
	MaxOneOff int
	// Memory bounds what idle sessions hold, in bytes (0: no bound): over
	// it, the least recently used idle ones close.
	Memory int64
	// FreezeAfter stops an idle session's process once idle this long, if
	// the backend can (0: DefaultFreezeAfter; negative: never).
	FreezeAfter time.Duration
	// Load is how many turns run and how many wait for a slot now
	// (TurnsChanged, and the spares' idle-time rule); nil: none.
	Load func() (running, waiting int)
	// Spares, with a Backend, keeps processes started ahead of need.
	Spares SpareConfig
	Log    *slog.Logger
	Now    func() time.Time
}

// Pool holds live sessions.
type Pool struct {
	cfg Config
	now func() time.Time
	log *slog.Logger

	mu       sync.Mutex
	idle     map[string]*Live // by conversation key
	inUse    map[string]*Live // taken or newly started, until Put or Discard
	count    int              // idle + in use + reserved
	closed   bool             // Close ran: what is put back is closed
	yielding bool             // turns run on every core: idle processes freeze at once
	done     chan struct{}
	wg       sync.WaitGroup
	// closers are the closes Reserve left running: reclaiming counts
	// them, exiting is what their processes held; Close joins them.
	closers    sync.WaitGroup
	reclaiming int
	exiting    int64
	// leaving are the conversations whose idle processes are closing
	// off a turn's path, by conversation (leaving.go).
	leaving map[string]*Live

	spares  *spareWorker // nil: no spares
	dropped dropped
	// stop ends the spare worker, which worker joins.
	stop   context.CancelFunc
	worker sync.WaitGroup
	busyMu sync.Mutex // orders TurnsChanged, so the last one reads the latest count
	busy   bool       // turns run on every core; under busyMu
	busyAt time.Time  // when they last did; under busyMu
}

// New returns a pool and starts its reaper. Close stops it.
func New(cfg Config) *Pool {
	if cfg.Max <= 0 {
		cfg.Max = DefaultMax
	}
	if cfg.IdleTTL <= 0 {
		cfg.IdleTTL = DefaultIdleTTL
	}
	if cfg.OneOffTTL <= 0 {
		cfg.OneOffTTL = min(DefaultOneOffTTL, cfg.IdleTTL)
	}
	if cfg.MaxOneOff <= 0 {
		cfg.MaxOneOff = DefaultMaxOneOff
	}
	if cfg.OneOffTTL >= cfg.IdleTTL {
		// One-offs kept as long as any conversation are like any other.
		cfg.OneOffTTL, cfg.MaxOneOff = cfg.IdleTTL, cfg.Max
	}
	if cfg.FreezeAfter == 0 {
		cfg.FreezeAfter = DefaultFreezeAfter
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Load == nil {
		cfg.Load = func() (int, int) { return 0, 0 }
	}
	p := &Pool{cfg: cfg, now: cfg.Now, log: cfg.Log, idle: map[string]*Live{}, inUse: map[string]*Live{}, done: make(chan struct{})}
	p.wg.Go(p.reap)
	ctx, stop := context.WithCancel(context.Background())
	p.stop = stop
	if sc := cfg.Spares; sc.Backend != nil && sc.Max > 0 && sc.Key != nil {
		sc.Min = max(min(sc.Min, sc.Max), 0)
		p.spares = &spareWorker{p: p, cfg: sc, kick: make(chan struct{}, 1), options: map[string]backend.StartOptions{}}
		p.worker.Go(func() { p.spares.run(ctx) })
	}
	return p
}

// take removes the conversation's idle session from the pool, if it has
// one. The caller owns it until it calls Put or Discard.
func (p *Pool) take(key string) *Live {
	p.mu.Lock()
	defer p.mu.Unlock()
	l := p.idle[key]
	if l != nil {
		delete(p.idle, key)
		p.inUse[key] = l
		p.wake(l)
	}
	return l
}

// Track records a session started under a reservation as in use by its
// conversation, until Put or Discard.
func (p *Pool) Track(l *Live) {
	p.mu.Lock()
	defer p.mu.Unlock()
	l.born = p.now()
	p.inUse[l.Key] = l
}

// Put returns a session to the pool, idle, after a completed turn. Idle
// sessions over the memory bound, and one-offs over theirs, close, the
// least recently used first. A session is measured when it first becomes
// idle, and again each time it has been idle a while, off the answer's
// path (sleepLater); meanwhile it counts with what it held last. A closed
// pool keeps nothing: the session is closed.
func (p *Pool) Put(l *Live) {
	if l.memory == 0 {
		// A new session: its later turns are measured in idle time.
		l.memory = measure(l.Session)
	}
	p.mu.Lock()
	l.lastUsed = p.now()
	if l.born.IsZero() {
		l.born = l.lastUsed
	}
	if p.inUse[l.Key] == l {
		delete(p.inUse, l.Key)
	}
	if p.closed {
		p.count--
		p.mu.Unlock()
		p.closeLive(l)
		return
	}
	var victims []*Live
	if old := p.idle[l.Key]; old != nil && old != l {
		// Cannot happen while turns of a conversation are serialised; if
		// it does, the newer session wins and the older is closed.
		p.retire(old)
		victims = append(victims, old)
		p.count--
	}
	p.idle[l.Key] = l
	p.sleepLater(l)
	victims = append(victims, p.overBounds()...)
	p.mu.Unlock()
	for _, v := range victims {
		p.closeLive(v)
	}
}

// Discard closes a session taken from the pool (or started under a
// reservation) and frees its place. It returns once the session is gone;
// a turn waits on it, so the process keeps its priority as it exits.
func (p *Pool) Discard(l *Live) {
	p.close(l)
	p.mu.Lock()
	if p.inUse[l.Key] == l {
		delete(p.inUse, l.Key)
	}
	p.count--
	p.mu.Unlock()
}

// maxReclaiming bounds the reclaimed processes that may still be exiting
// while the processes that took their places start.
const maxReclaiming = 16

// Reserve makes room for one more live session. When the pool is full it
// closes the least recently used idle session. A CLI's exit takes a
// while, which a new conversation's first turn should not wait for (ten
// new conversations in a full pool took 6.9–7.4 s joined, 6.3–6.4 s not:
// BenchmarkReclaim): the reclaimed process exits in the background while
// fewer than maxReclaiming do and what it held (its last measured PSS)
// still fits --live-memory beside the idle ones, and is counted there
// until it is gone (Close joins it); otherwise it is joined before
// Reserve returns. Either way its own conversation's next process waits
// for it to be gone (Obtain). If none is idle it returns ErrFull. The place is the
// caller's: Put the session started in it, or Release it.
func (p *Pool) Reserve(ctx context.Context) error {
	p.mu.Lock()
	if p.count < p.cfg.Max {
		p.count++
		p.mu.Unlock()
		return nil
	}
	victim := p.lruIdle(func(*Live) bool { return true })
	if victim == nil {
		p.mu.Unlock()
		return ErrFull
	}
	delete(p.idle, victim.Key)
	p.stopTimer(victim)
	p.retire(victim)
	behind := p.reclaiming < maxReclaiming && (p.cfg.Memory <= 0 || p.heldLocked()+victim.memory <= p.cfg.Memory)
	if behind {
		p.reclaiming++
		p.exiting += victim.memory
	}
	p.mu.Unlock()
	p.log.Info("closing the least recently used idle CLI process to make room", "conversation", victim.Key, "joined", !behind)
	// Its place passes to the caller.
	if behind {
		p.closers.Go(func() {
			p.closeLive(victim)
			p.mu.Lock()
			p.reclaiming--
			p.exiting -= victim.memory
			p.mu.Unlock()
		})
	} else {
		p.close(victim) // waited on: at its own priority
	}
	if err := ctx.Err(); err != nil {
		p.Release()
		return err
	}
	return nil
}

// lruIdle is the least recently used idle session that may go, or nil.
// Called with mu held.
func (p *Pool) lruIdle(may func(*Live) bool) *Live {
	var lru *Live
	for _, l := range p.idle {
		if may(l) && (lru == nil || l.lastUsed.Before(lru.lastUsed)) {
			lru = l
		}
	}
	return lru
}

// Release frees a reserved place that was not used.
func (p *Pool) Release() {
	p.mu.Lock()
	p.count--
	p.mu.Unlock()
}

// Stats reports live sessions in all and idle.
func (p *Pool) Stats() (live, idle int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.count, len(p.idle)
}

// IdleMemory is what idle sessions and spares hold, as measured when each
// became idle.
func (p *Pool) IdleMemory() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	var held int64
	for _, l := range p.idle {
		held += l.memory
	}
	return held
}

// Memory measures now what every live process holds, busy and idle (0
// for a backend that cannot say). The files are read outside the lock.
func (p *Pool) Memory() int64 {
	p.mu.Lock()
	sessions := make([]backend.Session, 0, len(p.idle)+len(p.inUse))
	for _, m := range []map[string]*Live{p.idle, p.inUse} {
		for _, l := range m {
			sessions = append(sessions, l.Session)
		}
	}
	p.mu.Unlock()
	var total int64
	for _, s := range sessions {
		total += measure(s)
	}
	return total
}

// SessionIDs lists the backend sessions of every live session, idle or in
// use.
func (p *Pool) SessionIDs() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]string, 0, len(p.idle)+len(p.inUse))
	for _, m := range []map[string]*Live{p.idle, p.inUse} {
		for _, l := range m {
			if id := l.Session.ID(); id != "" {
				out = append(out, id)
			}
		}
	}
	return out
}

// Holds reports whether a live session holds a conversation, and whether
// a turn is using it now.
func (p *Pool) Holds(key string) (live, busy bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	busy = p.inUse[key] != nil
	return busy || p.idle[key] != nil, busy
}

// Close stops the reaper and closes every idle session. Sessions in use
// belong to their turns, which close or return them.
func (p *Pool) Close() {
	p.stop()
	p.worker.Wait() // spares being started land in the pool, which closes them
	close(p.done)
	p.wg.Wait()
	p.mu.Lock()
	p.closed = true
	all := make([]*Live, 0, len(p.idle))
	for k, l := range p.idle {
		p.stopTimer(l)
		all = append(all, l)
		delete(p.idle, k)
	}
	p.count -= len(all)
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, l := range all {
		wg.Go(func() { p.closeLive(l) })
	}
	wg.Wait()
	p.closers.Wait()
}

func (p *Pool) reap() {
	t := time.NewTicker(min(p.cfg.OneOffTTL/4, 30*time.Second))
	defer t.Stop()
	for {
		select {
		case <-p.done:
			return
		case <-t.C:
		}
		p.mu.Lock()
		var expired []*Live
		for k, l := range p.idle {
			if p.now().Sub(l.lastUsed) >= p.ttlOf(l) {
				p.stopTimer(l)
				p.retire(l)
				expired = append(expired, l)
				delete(p.idle, k)
			}
		}
		p.count -= len(expired)
		p.mu.Unlock()
		for _, l := range expired {
			p.log.Info("closing an idle CLI process", "conversation", l.Key, "idle_for", p.ttlOf(l))
			p.closeLive(l)
		}
	}
}

// closeLive closes a session no turn waits on, its exit yielding to
// the processes at work.
func (p *Pool) closeLive(l *Live) {
	if y, ok := l.Session.(backend.Yielder); ok {
		y.Yield()
	}
	p.close(l)
}

func (p *Pool) close(l *Live) {
	if err := l.Session.Close(); err != nil {
		p.log.Warn("closing a live session", "conversation", l.Key, "err", err)
	}
	p.left(l)
}
