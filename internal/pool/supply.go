package pool

import (
	"context"
	"runtime"
	"time"

	"github.com/meridian-gw/meridian/internal/backend"
)

// Source says where Obtain found a turn's process.
type Source int

const (
	// Started: a new process, started for the turn.
	Started Source = iota
	// Kept: the conversation's own live process.
	Kept
	// Recycled: a kept one-off's process, emptied for a new conversation.
	Recycled
	// Spare: a process started ahead of need.
	Spare
)

// Fate is how a turn gives its process back.
type Fate int

const (
	// Keep: the process stands where the conversation was published; it
	// waits idle for the next turn.
	Keep Fate = iota
	// Broken: the process cannot serve the conversation again; it closes.
	Broken
)

// Want is what a turn asks of the pool.
type Want struct {
	// Key is the conversation.
	Key string
	// Fits reports whether the conversation's live process can take the
	// turn as it stands; nil when none can.
	Fits func(*Live) bool
	// New marks a conversation's first turn (or one starting over), which
	// a spare may serve; OneOff one that carries no name of the client's
	// either, which a kept one-off's emptied process may serve.
	New, OneOff bool
	// Contract and Tools are what the process must run under.
	Contract string
	Tools    []string
	// Options are the conversation's start options: a spare must have been
	// started with the same start-time part, and is bound to the rest.
	Options backend.StartOptions
	// Start starts a process for the turn, in a place the pool reserved,
	// and returns the options it started it with.
	Start func(context.Context) (backend.Session, backend.StartOptions, error)
}

// recycleTimeout bounds a process's rewind (2–11 ms measured) before the
// turn takes a spare instead.
const recycleTimeout = 2 * time.Second

// Obtain supplies a turn's process, from the first source that has one:
// the conversation's live process when it fits, a kept one-off's emptied
// process, a spare, then a new start in a reserved place (ErrFull when
// every place holds a process in use). The turn owns it until Return.
func (p *Pool) Obtain(ctx context.Context, w Want) (*Live, Source, error) {
	if l := p.take(w.Key); l != nil {
		if l.Session.Alive() && w.Fits != nil && w.Fits(l) {
			return l, Kept, nil
		}
		p.Discard(l) // another contract, or the conversation moved on elsewhere
	}
	if w.New && w.OneOff {
		if l := p.recycle(ctx, w); l != nil {
			return l, Recycled, nil
		}
	}
	if w.New {
		if l := p.takeSpare(w); l != nil {
			return l, Spare, nil
		}
	}
	// A process of the conversation's that is still closing goes first.
	if err := p.awaitGone(ctx, w.Key); err != nil {
		return nil, Started, err
	}
	if err := p.Reserve(ctx); err != nil {
		return nil, Started, err
	}
	sess, opts, err := w.Start(ctx)
	if err != nil {
		p.Release()
		return nil, Started, err
	}
	if opts.Resume == "" {
		p.spares.started(opts) // a new conversation's options: spares follow them
	}
	l := &Live{Key: w.Key, Session: sess, Contract: w.Contract, Tools: w.Tools}
	p.Track(l)
	return l, Started, nil
}

// Return gives back a process Obtain supplied: kept idle for the
// conversation's next turn, or closed.
func (p *Pool) Return(l *Live, f Fate) {
	if f == Keep {
		p.Put(l)
		return
	}
	p.Discard(l)
}

// recycle gives a new conversation that will be a one-off the emptied
// process of a kept one-off with the same contract and tools, when the
// one-offs kept are at their limit: titles, summaries and scripted
// prompts come one after another with one system prompt, and each would
// otherwise take a spare, whose replacement costs ~0.55 s of CPU, and push
// the oldest one-off out. Nil when none fits or its rewind fails (that
// process is closed, as it would have been).
func (p *Pool) recycle(ctx context.Context, w Want) *Live {
	l, was := p.TakeOneOff(w.Contract, w.Tools, w.Key)
	if l == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, recycleTimeout)
	defer cancel()
	if err := l.Session.(backend.Recycler).Recycle(ctx); err != nil {
		p.log.Warn("could not empty a one-off's CLI process for a new conversation; closing it", "conversation", w.Key, "err", err)
		p.Discard(l)
		return nil
	}
	p.dropped.add(was, l.Session.ID())
	p.log.Debug("a new conversation runs in a one-off's emptied process", "conversation", w.Key, "was", was, "session", l.Session.ID())
	p.spares.started(w.Options) // its options count for the spares as a start would
	return l
}

// takeSpare gives a new conversation a spare of its start-time contract,
// bound to its system prompt and tools, or nil.
func (p *Pool) takeSpare(w Want) *Live {
	if !p.spares.on() || w.Options.Resume != "" {
		return nil
	}
	l := p.TakeSpare(p.spares.cfg.Key(w.Options), w.Key)
	if l == nil {
		return nil
	}
	b, ok := l.Session.(backend.Binder)
	if !ok || b.Bind(w.Options) != nil {
		p.Discard(l)
		return nil
	}
	l.Contract, l.Tools = w.Contract, w.Tools
	p.spares.started(w.Options)
	return l
}

// Rewound reports whether a recycled process rewound conversation key's
// session past it: its next turn starts over with the history at once,
// rather than after a resume the CLI refuses.
func (p *Pool) Rewound(key, session string) bool { return p.dropped.has(key, session) }

// TurnsChanged reconsiders, when a turn has started or ended, whether
// turns run on every core: while they do, idle processes are held still
// (yieldToTurns), and the spares wait for the machine to have been idle a while.
func (p *Pool) TurnsChanged() {
	p.busyMu.Lock()
	defer p.busyMu.Unlock()
	running, _ := p.cfg.Load()
	busy := running >= runtime.NumCPU()
	if busy || p.busy {
		p.busyAt = p.now() // busy until now
	}
	p.busy = busy
	p.yieldToTurns(busy)
}

// lastBusy is when turns last ran on every core.
func (p *Pool) lastBusy() time.Time {
	p.busyMu.Lock()
	defer p.busyMu.Unlock()
	return p.busyAt
}
