package pool

import (
	"slices"
	"time"
)

// Spares are sessions started ahead of need for a start-time contract, not
// yet any conversation's. They wait in the idle set (frozen, within the
// memory bound) under keys no conversation has, until a new conversation
// with their contract takes one. They do not expire: whoever started them
// closes those no longer wanted (TrimSpares), as a replacement's start
// would cost more than a frozen spare.

// spareKey names a spare in the idle set: no conversation key starts with
// a NUL byte.
func spareKey(id string) string { return "\x00spare:" + id }

// Room reports whether one more session of about size bytes fits without
// closing anything: a place under Max, and memory under the bound.
func (p *Pool) Room(size int64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.count >= p.cfg.Max {
		return false
	}
	if p.cfg.Memory <= 0 {
		return true
	}
	return p.heldLocked()+size <= p.cfg.Memory
}

// heldLocked is what the memory bound counts: the idle processes and
// spares, and the reclaimed ones still exiting. Called with mu held.
func (p *Pool) heldLocked() int64 {
	held := p.exiting
	for _, l := range p.idle {
		held += l.memory
	}
	return held
}

// TryReserve takes a place if one is free, closing nothing.
func (p *Pool) TryReserve() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.count >= p.cfg.Max {
		return false
	}
	p.count++
	return true
}

// PutSpare adds a session started under a reservation as a spare for the
// start-time contract l.Spare.
func (p *Pool) PutSpare(l *Live) {
	l.Key = spareKey(l.Session.ID())
	p.Put(l)
}

// TakeSpare hands a spare of the start-time contract to conversation key,
// as a session in use; nil when there is none.
func (p *Pool) TakeSpare(contract, key string) *Live {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, l := range p.idle {
		if l.Spare != "" && l.Spare == contract {
			delete(p.idle, k)
			p.wake(l)
			l.Key, l.Spare = key, ""
			p.inUse[key] = l
			return l
		}
	}
	return nil
}

// Spares counts the spares of each start-time contract.
func (p *Pool) Spares() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]int{}
	for _, l := range p.idle {
		if l.Spare != "" {
			out[l.Spare]++
		}
	}
	return out
}

// TrimSpares closes the spares beyond want of each start-time contract
// (every spare of a contract want does not name), the most recently
// started first: the older ones have finished booting.
func (p *Pool) TrimSpares(want map[string]int) {
	p.mu.Lock()
	var spares []*Live
	for _, l := range p.idle {
		if l.Spare != "" {
			spares = append(spares, l)
		}
	}
	slices.SortFunc(spares, func(a, b *Live) int { return a.lastUsed.Compare(b.lastUsed) })
	kept := map[string]int{}
	var victims []*Live
	for _, l := range spares {
		if kept[l.Spare] < want[l.Spare] {
			kept[l.Spare]++
			continue
		}
		delete(p.idle, l.Key)
		p.stopTimer(l)
		p.count--
		victims = append(victims, l)
	}
	p.mu.Unlock()
	for _, l := range victims {
		p.closeLive(l)
	}
}

// MakeRoom closes the least recently used idle conversations' sessions
// idle at least idleFor, never a spare and never one in use, until one
// more session of about size bytes fits (Room). It reports whether it
// does.
func (p *Pool) MakeRoom(size int64, idleFor time.Duration) bool {
	for !p.Room(size) {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return false
		}
		lru := p.lruIdle(func(l *Live) bool { return l.Spare == "" && p.now().Sub(l.lastUsed) >= idleFor })
		if lru == nil {
			p.mu.Unlock()
			return false
		}
		delete(p.idle, lru.Key)
		p.stopTimer(lru)
		p.retire(lru)
		p.count--
		p.mu.Unlock()
		p.log.Info("closing the least recently used idle CLI process to make room for a spare", "conversation", lru.Key)
		p.closeLive(lru)
	}
	return true
}
