package pool

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// heavySession is a session that can be frozen and says how much memory
// it holds.
type heavySession struct {
	fakeSession
	mem    int64
	frozen atomic.Bool
	settle time.Duration
}

// settle is how long a heavy session stays awake after its start.
const settle = 30 * time.Second

func (h *heavySession) Memory() (int64, error) { return h.mem, nil }
func (h *heavySession) Freeze() error          { h.frozen.Store(true); return nil }
func (h *heavySession) Thaw() error            { h.frozen.Store(false); return nil }
func (h *heavySession) Settle() time.Duration  { return h.settle }

func heavy(key string, mib int64) (*Live, *heavySession) {
	s := &heavySession{fakeSession: fakeSession{id: key}, mem: mib << 20, settle: settle}
	return &Live{Key: key, Session: s}, s
}

// put starts a session in the pool and returns it idle, a little later
// than the one before.
func put(t *testing.T, p *Pool, l *Live) {
	t.Helper()
	if err := p.Reserve(context.Background()); err != nil {
		t.Fatal(err)
	}
	p.Track(l)
	time.Sleep(time.Millisecond)
	p.Put(l)
}

// Over the memory bound, the least recently used idle sessions close; a
// session in use is never closed, whatever it holds.
func TestMemoryBoundClosesLRUIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(Config{Max: 10, Memory: 300 << 20})
		defer p.Close()
		a, as := heavy("a", 100)
		b, bs := heavy("b", 100)
		c, cs := heavy("c", 100)
		put(t, p, a)
		put(t, p, b)
		put(t, p, c)
		if as.closed.Load() || bs.closed.Load() || cs.closed.Load() {
			t.Fatal("closed within the bound")
		}
		// a is taken for a turn and grows; d arrives: the bound is passed.
		if p.take("a") != a {
			t.Fatal("a not idle")
		}
		as.mem = 500 << 20
		d, ds := heavy("d", 150)
		put(t, p, d)
		if as.closed.Load() {
			t.Fatal("a session in use was closed")
		}
		if !bs.closed.Load() || cs.closed.Load() || ds.closed.Load() {
			t.Fatalf("closed b %v c %v d %v; want only b, the least recently used", bs.closed.Load(), cs.closed.Load(), ds.closed.Load())
		}
		// a comes back holding 500 MiB. It counts with the 100 MiB it held
		// when last measured, off its answer's path, until it has been
		// idle a while: c goes now. Measured then, it alone is over the
		// bound, and as the least recently used of the rest go first, it
		// goes last.
		time.Sleep(time.Millisecond)
		p.Put(a)
		if !cs.closed.Load() || ds.closed.Load() || as.closed.Load() {
			t.Fatalf("before a is measured again: closed a %v c %v d %v; want c", as.closed.Load(), cs.closed.Load(), ds.closed.Load())
		}
		time.Sleep(settle + time.Second)
		synctest.Wait()
		if !ds.closed.Load() || !as.closed.Load() {
			t.Fatalf("over the bound once measured: closed a %v d %v", as.closed.Load(), ds.closed.Load())
		}
		if n, idle := p.Stats(); n != 0 || idle != 0 {
			t.Fatalf("stats %d/%d", n, idle)
		}
	})
}

// One-off conversations are kept briefly, and only a few: the least
// recently used beyond MaxOneOff close at once, the rest after OneOffTTL;
// an established conversation keeps IdleTTL.
func TestOneOffsAreKeptBriefly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(Config{Max: 10, IdleTTL: time.Hour, OneOffTTL: time.Minute, MaxOneOff: 2})
		defer p.Close()
		var ones []*heavySession
		for _, k := range []string{"o1", "o2", "o3"} {
			l, s := heavy(k, 1)
			l.OneOff = true
			put(t, p, l)
			ones = append(ones, s)
		}
		est, es := heavy("established", 1)
		put(t, p, est)
		if !ones[0].closed.Load() || ones[1].closed.Load() || ones[2].closed.Load() {
			t.Fatal("want the oldest one-off closed beyond two")
		}
		time.Sleep(time.Minute + 16*time.Second) // the reaper looks every quarter TTL
		synctest.Wait()
		if !ones[1].closed.Load() || !ones[2].closed.Load() || es.closed.Load() {
			t.Fatalf("after a minute: one-offs closed %v %v, established closed %v", ones[1].closed.Load(), ones[2].closed.Load(), es.closed.Load())
		}
	})
}

// An idle session is frozen after FreezeAfter and thawed when taken; a
// new one stays awake for as long as it says it settles, while the CLI
// does its own start-up work, so that its next turn does not.
func TestIdleSessionsFreezeAndThaw(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(Config{Max: 2, FreezeAfter: 5 * time.Second})
		defer p.Close()
		l, s := heavy("a", 1)
		put(t, p, l)
		time.Sleep(settle - time.Second)
		synctest.Wait()
		if s.frozen.Load() {
			t.Fatal("a new session was frozen before it settled")
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if !s.frozen.Load() {
			t.Fatal("not frozen once settled")
		}
		if p.take("a") != l || s.frozen.Load() {
			t.Fatal("taken but still frozen")
		}
		// Taken before the timer fires: never frozen while in use.
		time.Sleep(time.Minute)
		synctest.Wait()
		if s.frozen.Load() {
			t.Fatal("frozen while in use")
		}
		p.Put(l)
		time.Sleep(4 * time.Second)
		synctest.Wait()
		if s.frozen.Load() {
			t.Fatal("frozen too soon")
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if !s.frozen.Load() {
			t.Fatal("not frozen after idling")
		}
		if p.take("a") != l {
			t.Fatal("not handed back")
		}
		p.Discard(l)
	})
}

// A one-off freezes as soon as it is idle, once settled; an established
// conversation's process stays awake for FreezeAfter; a one-off that
// continues is thawed like any other.
func TestOneOffsFreezeAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(Config{Max: 4, FreezeAfter: 5 * time.Second})
		defer p.Close()
		one, ones := heavy("one", 1)
		ones.settle = 0
		one.OneOff = true
		est, ests := heavy("est", 1)
		ests.settle = 0
		put(t, p, one)
		put(t, p, est)
		synctest.Wait()
		if !ones.frozen.Load() || ests.frozen.Load() {
			t.Fatalf("at once: one-off frozen %v, established frozen %v; want only the one-off", ones.frozen.Load(), ests.frozen.Load())
		}
		if p.take("one") != one || ones.frozen.Load() {
			t.Fatal("a one-off taken again is still frozen")
		}
		p.Discard(one)

		// A one-off just started settles first.
		fresh, freshs := heavy("fresh", 1)
		fresh.OneOff = true
		put(t, p, fresh)
		time.Sleep(settle - time.Second)
		synctest.Wait()
		if freshs.frozen.Load() {
			t.Fatal("a new one-off was frozen before it settled")
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if !freshs.frozen.Load() || !ests.frozen.Load() {
			t.Fatalf("once settled: one-off frozen %v, established frozen %v", freshs.frozen.Load(), ests.frozen.Load())
		}
	})
}

// A new session with no start-up work to finish is frozen after
// FreezeAfter like any other.
func TestANewSessionThatNeedNotSettleFreezesAfterItsIdleTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(Config{Max: 2, FreezeAfter: 5 * time.Second})
		defer p.Close()
		l, s := heavy("a", 1)
		s.settle = 0
		put(t, p, l)
		time.Sleep(4 * time.Second)
		synctest.Wait()
		if s.frozen.Load() {
			t.Fatal("frozen before its idle time")
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if !s.frozen.Load() {
			t.Fatal("a new session that need not settle stayed awake past its idle time")
		}
		p.Discard(l)
	})
}

// While idle processes yield to turns, idle sessions freeze at once, those already idle and
// those put back; once they no longer yield, the ones it froze wake for their idle time
// and freeze as usual after it, while one frozen by its own idle time
// stays frozen. A session in use is never frozen.
func TestYieldingFreezesIdleSessionsUntilQuiet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(Config{Max: 4, FreezeAfter: 5 * time.Second})
		defer p.Close()
		old, olds := heavy("old", 1)
		put(t, p, old)
		time.Sleep(settle + time.Second)
		synctest.Wait()
		if !olds.frozen.Load() {
			t.Fatal("not frozen once settled")
		}
		awake, awakes := heavy("awake", 1)
		put(t, p, awake)
		busy, busys := heavy("busy", 1)
		put(t, p, busy)
		if p.take("busy") != busy {
			t.Fatal("busy not idle")
		}
		p.yieldToTurns(true)
		if !awakes.frozen.Load() || busys.frozen.Load() {
			t.Fatalf("yielding: awake frozen %v, in use frozen %v", awakes.frozen.Load(), busys.frozen.Load())
		}
		p.Put(busy)
		if !busys.frozen.Load() {
			t.Fatal("put back while yielding, but not frozen at once")
		}
		p.yieldToTurns(false)
		if awakes.frozen.Load() || busys.frozen.Load() || !olds.frozen.Load() {
			t.Fatalf("quiet: awake %v busy %v (want both thawed), old %v (want still frozen)",
				awakes.frozen.Load(), busys.frozen.Load(), olds.frozen.Load())
		}
		time.Sleep(settle)
		synctest.Wait()
		if !awakes.frozen.Load() || !busys.frozen.Load() {
			t.Fatal("not frozen again after their idle time")
		}
		// A session frozen for the turns, taken for a turn, is thawed, and stays so.
		p.yieldToTurns(true)
		if p.take("old") != old || olds.frozen.Load() {
			t.Fatal("taken while yielding, but still frozen")
		}
		p.yieldToTurns(false)
		if olds.frozen.Load() {
			t.Fatal("frozen in use")
		}
		p.Discard(old)
	})
}

// With freezing off, yielding does nothing.
func TestYieldingNeedsFreezing(t *testing.T) {
	p := New(Config{Max: 2, FreezeAfter: -1})
	defer p.Close()
	l, s := heavy("a", 1)
	put(t, p, l)
	p.yieldToTurns(true)
	if s.frozen.Load() {
		t.Fatal("frozen with freezing off")
	}
}

// countingSession counts how often its memory is read.
type countingSession struct {
	heavySession
	reads atomic.Int32
}

func (c *countingSession) Memory() (int64, error) {
	c.reads.Add(1)
	return c.heavySession.Memory()
}

// A session's memory is read when it first becomes idle, then only once
// it has been idle a while: reading a CLI's PSS takes milliseconds, which
// a warm turn's answer should not wait for.
func TestMemoryIsMeasuredInIdleTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(Config{Max: 2, FreezeAfter: 5 * time.Second})
		defer p.Close()
		s := &countingSession{heavySession: heavySession{fakeSession: fakeSession{id: "a"}, mem: 100 << 20}}
		l := &Live{Key: "a", Session: s}
		put(t, p, l)
		if n := s.reads.Load(); n != 1 {
			t.Fatalf("%d reads when it first became idle, want 1", n)
		}
		for range 3 {
			if p.take("a") != l {
				t.Fatal("not idle")
			}
			p.Put(l)
			if n := s.reads.Load(); n != 1 {
				t.Fatalf("%d reads after a warm turn's Put, want none more", n)
			}
		}
		time.Sleep(6 * time.Second)
		synctest.Wait()
		if n := s.reads.Load(); n != 2 || !s.frozen.Load() {
			t.Fatalf("once idle a while: %d reads (want 2), frozen %v", n, s.frozen.Load())
		}
	})
}
