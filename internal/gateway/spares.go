package gateway

import (
	"strconv"
	"sync"
	"time"

	"github.com/meridian-gw/meridian/internal/backend"
	"github.com/meridian-gw/meridian/internal/pool"
	"github.com/meridian-gw/meridian/internal/procmem"
)

// Spare sizing.
const (
	// DefaultSpares is how many spare processes wait by default.
	DefaultSpares = 1
	// spareMemory is what a waiting spare holds, for the room check before
	// one is started (measured: ~95 MiB PSS before its first turn).
	spareMemory = 128 << 20
	// minAvailable is the memory the machine must have free for a spare
	// to be started: spares are a luxury, never a cause of pressure.
	minAvailable = 1 << 30
	// recentStarts is how many recent new-process starts choose the
	// contract spares are kept for.
	recentStarts = 16
)

// spares keeps processes started ahead of need for the start-time
// contract recent new conversations used most, so that a new
// conversation's first turn skips the CLI's start. One background worker
// starts and replaces them, never a request.
type spares struct {
	mu     sync.Mutex
	recent []backend.StartOptions // the start-time options of recent starts
	kick   chan struct{}          // wakes the worker
	wg     sync.WaitGroup
}

// refillDelay lets the turn that used a spare (or started a process) run
// before a replacement competes with it for CPU.
const refillDelay = 500 * time.Millisecond

// startKey digests the options a process must be started with: a spare
// serves only a conversation whose options give the same key. The system
// prompt, tools and output schema come later (Bind); the CLI's own tool
// list (web search) is on its command line; resumes never use spares.
func startKey(o backend.StartOptions) string {
	return digest(append([]string{o.Model, o.Dir, strconv.Itoa(o.MaxOutputTokens), strconv.Itoa(int(o.Thinking.Mode)),
		strconv.Itoa(o.Thinking.Budget), o.Effort}, webSearchKey(o.WebSearch)...)...)
}

// takeSpare gives a fresh conversation a spare of its start-time contract,
// bound to its system prompt and tools, or nil.
func (g *Gateway) takeSpare(opts backend.StartOptions, key string) *pool.Live {
	if g.cfg.Spares <= 0 || opts.Resume != "" {
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
	if g.cfg.Spares <= 0 {
		return
	}
	s := &g.spares
	s.mu.Lock()
	opts.System, opts.Tools, opts.JSONSchema, opts.Resume, opts.ResumeAt, opts.SessionID = nil, nil, nil, "", "", ""
	s.recent = append(s.recent, opts)
	if len(s.recent) > recentStarts {
		s.recent = s.recent[len(s.recent)-recentStarts:]
	}
	s.mu.Unlock()
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// keepSpares is the spare worker: on each kick it closes spares of other
// contracts than the most used and starts what that one lacks, while the
// pool and the machine have the memory.
func (g *Gateway) keepSpares(b backend.SpareBackend) {
	s := &g.spares
	for {
		select {
		case <-g.closing.Done():
			return
		case <-s.kick:
		}
		select {
		case <-g.closing.Done():
			return
		case <-time.After(refillDelay):
		}
		s.mu.Lock()
		want, wantKey := mostUsed(s.recent)
		s.mu.Unlock()
		g.pool.DropSpares(wantKey)
		for n := g.pool.Spares()[wantKey]; n < g.cfg.Spares; n++ {
			if g.closing.Err() != nil || !g.pool.Room(spareMemory) || available() < minAvailable || !g.pool.TryReserve() {
				break
			}
			sess, err := b.StartSpare(g.closing, want)
			if err != nil {
				g.pool.Release()
				g.log.Debug("could not start a spare "+g.cfg.CLI.Name+" process", "err", err)
				break
			}
			g.pool.PutSpare(&pool.Live{Session: sess, Spare: wantKey})
		}
	}
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
