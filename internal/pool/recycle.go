package pool

import (
	"slices"
	"sync"

	"github.com/meridian-gw/meridian/internal/backend"
)

// MaxRecycled bounds how many conversations one process serves one after
// another (TakeOneOff): the CLI appends each to one transcript, which a
// resume reads whole (about 8 KB each for a short exchange, measured).
const MaxRecycled = 64

// TakeOneOff hands conversation key, a new conversation that will be a
// one-off too, the process of the least recently used idle one-off with
// the same contract and exactly the same tools, when the one-offs kept
// are at their limit: the new one would push one of them out of the pool
// anyway, and the process it takes serves the new one, once emptied
// (backend.Recycler), without a spare's start. The caller recycles it,
// or discards it. It returns the conversation the process held, or nil
// when none fits.
func (p *Pool) TakeOneOff(contract string, tools []string, key string) (l *Live, was string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	kept := 0
	for _, l := range p.idle {
		if l.OneOff {
			kept++
		}
	}
	if kept < p.cfg.MaxOneOff || p.closed {
		return nil, ""
	}
	l = p.lruIdle(func(l *Live) bool {
		_, ok := l.Session.(backend.Recycler)
		return ok && l.OneOff && l.Contract == contract && sameSet(l.Tools, tools) && l.recycled < MaxRecycled
	})
	if l == nil {
		return nil, ""
	}
	was = l.Key
	delete(p.idle, l.Key)
	p.wake(l)
	l.Key, l.OneOff, l.Version, l.Pin, l.Reported = key, false, 0, "", backend.Usage{}
	l.recycled++
	p.inUse[key] = l
	return l, was
}

// sameSet reports whether a and b hold the same names, in any order.
func sameSet(a, b []string) bool {
	return len(a) == len(b) && slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}

// maxDropped bounds the conversations remembered as dropped from their
// session: past it, the oldest one's next turn finds out by trying.
const maxDropped = 256

// dropped remembers the conversations whose session a recycled process
// rewound past (Rewound).
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
