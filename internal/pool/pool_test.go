package pool

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/meridian-gw/meridian/internal/backend"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type fakeSession struct {
	id              string
	closed, yielded atomic.Bool
}

func (f *fakeSession) Turn(context.Context, backend.Input, func(*backend.Event) error) (*backend.Result, error) {
	return &backend.Result{}, nil
}
func (f *fakeSession) Close() error                    { f.closed.Store(true); return nil }
func (f *fakeSession) Yield()                          { f.yielded.Store(!f.closed.Load()) }
func (f *fakeSession) ID() string                      { return f.id }
func (f *fakeSession) Alive() bool                     { return !f.closed.Load() }
func (f *fakeSession) Answer(backend.ToolResult) error { return nil }

func live(key string) (*Live, *fakeSession) {
	s := &fakeSession{id: key}
	return &Live{Key: key, Session: s}, s
}

func TestTakePutDiscard(t *testing.T) {
	p := New(Config{Max: 2, IdleTTL: time.Hour})
	defer p.Close()
	if err := p.Reserve(context.Background()); err != nil {
		t.Fatal(err)
	}
	a, as := live("a")
	p.Put(a)
	if got := p.take("a"); got != a {
		t.Fatal("the idle session was not handed back")
	}
	if p.take("a") != nil {
		t.Fatal("a session was handed out twice")
	}
	p.Discard(a)
	if !as.closed.Load() {
		t.Fatal("discarded session not closed")
	}
	if as.yielded.Load() {
		t.Fatal("a discarded session, which its turn waits on, was closed at the least priority")
	}
	if n, idle := p.Stats(); n != 0 || idle != 0 {
		t.Fatalf("stats %d/%d", n, idle)
	}
}

func TestReserveReclaimsTheLeastRecentlyUsedIdle(t *testing.T) {
	p := New(Config{Max: 2, IdleTTL: time.Hour})
	defer p.Close()
	clock := time.Unix(0, 0)
	p.now = func() time.Time { return clock }
	for _, k := range []string{"old", "new"} {
		if err := p.Reserve(context.Background()); err != nil {
			t.Fatal(err)
		}
		l, _ := live(k)
		p.Put(l)
		clock = clock.Add(time.Minute)
	}
	oldS := p.take("old").Session.(*fakeSession)
	p.Put(&Live{Key: "old", Session: oldS}) // used again: now the most recent
	clock = clock.Add(time.Minute)
	newS := p.idle["new"].Session.(*fakeSession)
	if err := p.Reserve(context.Background()); err != nil {
		t.Fatal(err)
	}
	p.closers.Wait()
	if !newS.closed.Load() || oldS.closed.Load() {
		t.Fatal("reclaimed the wrong session")
	}
	if !newS.yielded.Load() {
		t.Fatal("a reclaimed idle session was not lowered to the least priority before its close")
	}
	if n, _ := p.Stats(); n != 2 {
		t.Fatalf("count %d", n)
	}
	// With everything in use there is no room, and nothing active is taken.
	p.take("old")
	if err := p.Reserve(context.Background()); !errors.Is(err, ErrFull) {
		t.Fatalf("err = %v, want ErrFull", err)
	}
	if oldS.closed.Load() {
		t.Fatal("a session in use was closed")
	}
}

// An idle session lives its ttl, not less, and is closed within one reap
// tick (ttl/4) after.
func TestIdleSessionsExpire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(Config{Max: 4, IdleTTL: 40 * time.Millisecond})
		defer p.Close()
		_ = p.Reserve(context.Background())
		l, s := live("a")
		p.Put(l)
		time.Sleep(39 * time.Millisecond)
		synctest.Wait()
		if s.closed.Load() {
			t.Fatal("closed before its ttl")
		}
		time.Sleep(11 * time.Millisecond)
		synctest.Wait()
		if !s.closed.Load() || !s.yielded.Load() {
			t.Fatalf("idle session never expired, or not at the least priority: closed %v, yielded %v", s.closed.Load(), s.yielded.Load())
		}
		if n, idle := p.Stats(); n != 0 || idle != 0 {
			t.Fatalf("stats %d/%d", n, idle)
		}
	})
}

func TestCloseClosesIdleSessions(t *testing.T) {
	p := New(Config{Max: 4, IdleTTL: time.Hour})
	_ = p.Reserve(context.Background())
	l, s := live("a")
	p.Put(l)
	p.Close()
	if !s.closed.Load() {
		t.Fatal("idle session left open at close")
	}
}

// A turn that ends after the pool closed hands back a session nobody will
// ever close again: the closed pool closes it at once.
func TestPutAfterCloseClosesTheSession(t *testing.T) {
	p := New(Config{Max: 2, IdleTTL: time.Hour})
	if err := p.Reserve(context.Background()); err != nil {
		t.Fatal(err)
	}
	a, as := live("a")
	p.Track(a)
	p.Close()
	p.Put(a)
	if !as.closed.Load() {
		t.Fatal("a session put back into a closed pool was stranded")
	}
	if n, idle := p.Stats(); n != 0 || idle != 0 {
		t.Fatalf("stats after close: %d live, %d idle", n, idle)
	}
}

// slowClose is a session whose close waits until it is let go.
type slowClose struct {
	fakeSession
	release chan struct{}
}

func (s *slowClose) Close() error { <-s.release; return s.fakeSession.Close() }

// A reclaimed process exits in the background only while what it held
// fits the memory bound beside the idle ones, and counts there until it
// is gone; one that does not fit is joined before its replacement's
// place is given.
func TestReclaimsOverlapOnlyWithinTheMemoryBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(Config{Max: 2, IdleTTL: time.Hour, Memory: 300 << 20, FreezeAfter: -1})
		defer p.Close()
		var sessions []*slowClose
		for _, k := range []string{"a", "b"} {
			if err := p.Reserve(context.Background()); err != nil {
				t.Fatal(err)
			}
			s := &slowClose{fakeSession: fakeSession{id: k}, release: make(chan struct{})}
			sessions = append(sessions, s)
			p.Put(&Live{Key: k, Session: s})
			time.Sleep(time.Second)
		}
		p.mu.Lock()
		p.idle["a"].memory, p.idle["b"].memory = 120<<20, 120<<20
		p.mu.Unlock()

		// a's 120 MiB fit beside b's: it exits behind, counted until gone.
		if err := p.Reserve(context.Background()); err != nil {
			t.Fatal(err)
		}
		if p.Room(100 << 20) {
			t.Fatal("the memory an exiting process holds was not counted against the bound")
		}
		// b's would not fit beside a's exiting ones and a new spare's: it
		// is joined, so Reserve returns only once it is gone.
		p.Put(&Live{Key: "c", Session: &fakeSession{id: "c"}, memory: 100 << 20})
		returned := make(chan error, 1)
		go func() { returned <- p.Reserve(context.Background()) }()
		synctest.Wait()
		select {
		case err := <-returned:
			t.Fatalf("Reserve returned (%v) before the process it reclaimed was gone", err)
		default:
		}
		close(sessions[1].release)
		if err := <-returned; err != nil || !sessions[1].closed.Load() || sessions[1].yielded.Load() {
			t.Fatalf("the joined close: %v, closed %v, yielded %v", err, sessions[1].closed.Load(), sessions[1].yielded.Load())
		}
		close(sessions[0].release)
		p.closers.Wait()
		p.mu.Lock()
		exiting := p.exiting
		p.mu.Unlock()
		if exiting != 0 {
			t.Fatalf("gone processes still count %d bytes against the bound", exiting)
		}
	})
}
