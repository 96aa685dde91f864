package pool

import (
	"math"
	"time"

	"github.com/meridian-gw/meridian/internal/backend"
)

// measure reads what a session's process holds in memory, or 0 when the
// backend cannot say.
func measure(s backend.Session) int64 {
	m, ok := s.(backend.Measurer)
	if !ok {
		return 0
	}
	n, err := m.Memory()
	if err != nil {
		return 0
	}
	return n
}

// ttlOf is how long an idle session may stay: a spare, until it is no
// longer wanted.
func (p *Pool) ttlOf(l *Live) time.Duration {
	if l.Spare != "" {
		return math.MaxInt64
	}
	if l.OneOff {
		return p.cfg.OneOffTTL
	}
	return p.cfg.IdleTTL
}

// overBounds takes out of the pool the idle sessions that must close: the
// least recently used one-offs beyond their number, then the least
// recently used of all while idle sessions hold more memory than the
// bound. Called with mu held; the caller closes them.
func (p *Pool) overBounds() []*Live {
	var victims []*Live
	take := func(l *Live) {
		delete(p.idle, l.Key)
		p.stopTimer(l)
		p.retire(l)
		p.count--
		victims = append(victims, l)
	}
	for {
		var oldest *Live
		n := 0
		for _, l := range p.idle {
			if l.OneOff {
				n++
				if oldest == nil || l.lastUsed.Before(oldest.lastUsed) {
					oldest = l
				}
			}
		}
		if n <= p.cfg.MaxOneOff {
			break
		}
		p.log.Info("closing a one-off conversation's idle CLI process: more one-offs are idle than are kept", "conversation", oldest.Key)
		take(oldest)
	}
	if p.cfg.Memory <= 0 {
		return victims
	}
	for {
		var held int64
		var lru *Live
		for _, l := range p.idle {
			held += l.memory
			if lru == nil || l.lastUsed.Before(lru.lastUsed) {
				lru = l
			}
		}
		if held <= p.cfg.Memory || lru == nil {
			return victims
		}
		p.log.Info("closing the least recently used idle CLI process: idle processes hold more than --live-memory",
			"conversation", lru.Key, "held_mib", held>>20, "bound_mib", p.cfg.Memory>>20)
		take(lru)
	}
}

// sleepLater measures an idle session's memory and freezes its process
// once it has been idle a while: a stopped process wakes no timers and
// costs no CPU. Reading a process's PSS walks its page tables (1.7 ms for
// an idle CLI, more under load; measured), which is why it waits for idle
// time rather than delaying the answer that just ended. A one-off freezes
// as soon as it has settled: most never continue (a title, a single
// question), so what the CLI does in the seconds after a turn (~0.2 s of
// CPU, most of it a collection) would be spent for nothing; one that does
// continue pays ~20 ms of it in its next turn (measured). Called with mu
// held.
func (p *Pool) sleepLater(l *Live) {
	p.stopTimer(l)
	f, freezes := l.Session.(backend.Freezer)
	freezes = freezes && p.cfg.FreezeAfter >= 0
	if freezes && p.yielding {
		p.freezeNow(l) // measured when the turns let it go
		return
	}
	after := p.cfg.FreezeAfter
	if after < 0 {
		after = DefaultFreezeAfter // measured, not frozen
	}
	if l.OneOff {
		after = 0
	}
	if freezes {
		after = max(after, l.born.Add(f.Settle()).Sub(p.now()))
	}
	l.idleSince++
	gen := l.idleSince
	l.freeze = time.AfterFunc(after, func() { p.settle(l, gen, freezes) })
}

// settle is an idle session's work once idle a while: its memory is
// measured, the bound enforced with it, and its process frozen.
func (p *Pool) settle(l *Live, gen int, freeze bool) {
	current := func() bool { return p.idle[l.Key] == l && l.idleSince == gen && !p.closed }
	p.mu.Lock()
	ok := current()
	p.mu.Unlock()
	if !ok {
		return
	}
	m := measure(l.Session) // outside the lock: it takes milliseconds
	p.mu.Lock()
	if !current() {
		p.mu.Unlock()
		return
	}
	if m > 0 {
		l.memory = m
	}
	if freeze && !l.frozen {
		if err := l.Session.(backend.Freezer).Freeze(); err != nil {
			p.log.Debug("could not freeze an idle CLI process", "conversation", l.Key, "err", err)
		} else {
			l.frozen = true
		}
	}
	victims := p.overBounds()
	p.mu.Unlock()
	for _, v := range victims {
		p.closeLive(v)
	}
}

// yieldToTurns freezes (on) every idle process still awake, and each that goes
// idle after, at once; off, it wakes those it froze for the rest of
// their idle time. TurnsChanged turns it on while turns run on every core: a
// CLI's own work in the seconds after a turn (~0.3 s of CPU, measured)
// then waits for idle time instead of slowing the turns and starts that
// need the CPU now.
func (p *Pool) yieldToTurns(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.yielding == on || p.closed || p.cfg.FreezeAfter < 0 {
		return
	}
	p.yielding = on
	for _, l := range p.idle {
		switch {
		case on && !l.frozen:
			p.freezeNow(l)
		case !on && l.forTurns:
			p.wake(l)
			p.sleepLater(l)
		}
	}
}

// freezeNow freezes an idle session at once. Called with mu held.
func (p *Pool) freezeNow(l *Live) {
	f, ok := l.Session.(backend.Freezer)
	if !ok || l.frozen {
		return
	}
	p.stopTimer(l)
	if err := f.Freeze(); err != nil {
		p.log.Debug("could not freeze an idle CLI process", "conversation", l.Key, "err", err)
		return
	}
	l.frozen, l.forTurns = true, true
}

// wake thaws a session that is leaving the idle set. Called with mu held.
func (p *Pool) wake(l *Live) {
	p.stopTimer(l)
	l.forTurns = false
	if !l.frozen {
		return
	}
	l.frozen = false
	if err := l.Session.(backend.Freezer).Thaw(); err != nil {
		p.log.Warn("could not thaw a CLI process", "conversation", l.Key, "err", err)
	}
}

func (p *Pool) stopTimer(l *Live) {
	if l.freeze != nil {
		l.freeze.Stop()
		l.freeze = nil
	}
}
