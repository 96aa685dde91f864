package pool

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// spare starts a spare of contract c under a reservation.
func spare(t *testing.T, p *Pool, c string) *fakeSession {
	t.Helper()
	if !p.TryReserve() {
		t.Fatal("no place for a spare")
	}
	s := &fakeSession{id: c + time.Now().String()}
	p.PutSpare(&Live{Session: s, Spare: c})
	return s
}

// Making room for a spare closes the least recently used idle
// conversation, never a spare and never a session in use; with nothing
// idle it closes nothing and says so.
func TestMakeRoomClosesOnlyIdleConversations(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(Config{Max: 3, IdleTTL: time.Hour})
		defer p.Close()
		sp := spare(t, p, "c")
		for _, k := range []string{"old", "busy"} {
			if err := p.Reserve(context.Background()); err != nil {
				t.Fatal(err)
			}
			l, _ := live(k)
			p.Put(l)
			time.Sleep(time.Second)
		}
		busy := p.take("busy")
		if p.Room(1) {
			t.Fatal("a full pool has room")
		}
		old := p.idle["old"].Session.(*fakeSession)
		if p.MakeRoom(1, time.Hour) || old.closed.Load() {
			t.Fatal("room was made by closing a conversation idle less than asked")
		}
		if !p.MakeRoom(1, 0) || !old.closed.Load() {
			t.Fatal("the idle conversation was not closed to make room")
		}
		if sp.closed.Load() || !busy.Session.Alive() {
			t.Fatal("making room closed a spare or a session in use")
		}
		if !p.TryReserve() {
			t.Fatal("no place after making room")
		}
		// Now everything is a spare or in use.
		if p.MakeRoom(1, 0) {
			t.Fatal("room was made with nothing idle to close")
		}
		if sp.closed.Load() || !busy.Session.Alive() {
			t.Fatal("a spare or a session in use was closed")
		}
		p.Release()
		p.Put(busy)
	})
}

// Spares do not expire with idle conversations; TrimSpares closes those
// beyond what each contract is given, the newest first.
func TestSparesStayUntilTrimmed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(Config{Max: 8, IdleTTL: time.Minute})
		defer p.Close()
		a1 := spare(t, p, "a")
		time.Sleep(time.Second)
		a2 := spare(t, p, "a")
		b := spare(t, p, "b")
		time.Sleep(2 * time.Hour)
		synctest.Wait()
		if got := p.Spares(); got["a"] != 2 || got["b"] != 1 {
			t.Fatalf("spares after two idle hours: %v", got)
		}
		p.TrimSpares(map[string]int{"a": 1})
		if a1.closed.Load() || !a2.closed.Load() || !b.closed.Load() {
			t.Fatalf("trim to a:1 closed a1=%v a2=%v b=%v", a1.closed.Load(), a2.closed.Load(), b.closed.Load())
		}
		if n, idle := p.Stats(); n != 1 || idle != 1 {
			t.Fatalf("after the trim: %d live, %d idle", n, idle)
		}
	})
}
