package gateway

import (
	"context"
	"sync"
	"time"

	"github.com/meridian-gw/meridian/internal/backend"
	"github.com/meridian-gw/meridian/internal/pool"
)

// recycleTimeout bounds a process's rewind (2–11 ms measured) before the
// turn takes a spare instead.
const recycleTimeout = 2 * time.Second

// recycle gives a new conversation that will be a one-off (no name of the
// client's, nothing stored) the emptied process of a kept one-off with the
// same contract and tools, when the one-offs kept are at their limit:
// titles, summaries and scripted prompts come one after another with one
// system prompt, and each would otherwise take a spare, whose replacement
// costs ~0.55 s of CPU, and push the oldest one-off out. Nil when none
// fits or its rewind fails (that process is closed, as it would have been).
func (g *Gateway) recycle(ctx context.Context, t *turn, contract string, tools []string) *pool.Live {
	if !t.ident.Fingerprint || t.mapping.Version != 0 {
		return nil
	}
	l, was := g.pool.TakeOneOff(contract, tools, t.ident.Key)
	if l == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, recycleTimeout)
	defer cancel()
	if err := l.Session.(backend.Recycler).Recycle(ctx); err != nil {
		g.log.Warn("could not empty a one-off's "+g.cfg.CLI.Name+" process for a new conversation; closing it", "conversation", t.ident.Key, "err", err)
		g.pool.Discard(l)
		return nil
	}
	g.dropped.add(was, l.Session.ID())
	g.log.Debug("a new conversation runs in a one-off's emptied process", "conversation", t.ident.Key, "was", was, "session", l.Session.ID())
	g.refill(t.opts) // its options count for the spares as a start would
	return l
}

// maxDropped bounds the conversations remembered as dropped from their
// session: past it, the oldest one's next turn finds out by trying.
const maxDropped = 256

// dropped remembers the conversations whose session a recycled process
// rewound past: their next turn starts over with the history at once,
// rather than after a resume the CLI refuses (a CLI start for nothing).
type dropped struct {
	mu    sync.Mutex
	of    map[string]string // conversation key → the session it can no longer resume
	order []string
}

func (d *dropped) add(key, session string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.of == nil {
		d.of = map[string]string{}
	}
	if _, ok := d.of[key]; !ok {
		d.order = append(d.order, key)
	}
	d.of[key] = session
	if len(d.order) > maxDropped {
		delete(d.of, d.order[0])
		d.order = d.order[1:]
	}
}

// has reports whether conversation key's session was rewound past.
func (d *dropped) has(key, session string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	s, ok := d.of[key]
	return ok && s == session
}
