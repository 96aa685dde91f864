package pool

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"
)

// recyclable is a frozen-capable session that can be emptied.
type recyclable struct{ heavySession }

func (*recyclable) Recycle(context.Context) error { return nil }

func oneOff(key, contract string, tools ...string) (*Live, *recyclable) {
	s := &recyclable{heavySession{fakeSession: fakeSession{id: key}, mem: 1 << 20}}
	return &Live{Key: key, Session: s, Contract: contract, Tools: tools, OneOff: true}, s
}

// A new conversation takes a kept one-off's process only when the
// one-offs are at their limit, only one of its contract and exact tools,
// the least recently used of those, never one in use, and no process
// more than MaxRecycled times.
func TestTakeOneOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(Config{Max: 10, IdleTTL: time.Hour, OneOffTTL: time.Minute, MaxOneOff: 2})
		defer p.Close()
		a, as := oneOff("a", "c", "t1", "t2")
		put(t, p, a)
		if l, _ := p.TakeOneOff("c", []string{"t1", "t2"}, "new"); l != nil {
			t.Fatal("a one-off was taken while fewer than MaxOneOff were kept")
		}
		b, _ := oneOff("b", "c", "t2", "t1")
		put(t, p, b)
		for _, c := range []struct {
			contract string
			tools    []string
		}{{"c2", []string{"t1", "t2"}}, {"c", []string{"t1"}}, {"c", []string{"t1", "t2", "t3"}}, {"c", nil}} {
			if l, _ := p.TakeOneOff(c.contract, c.tools, "new"); l != nil {
				t.Fatalf("contract %q tools %v took %s", c.contract, c.tools, l.Key)
			}
		}
		got, was := p.TakeOneOff("c", []string{"t2", "t1"}, "new")
		if got != a || was != "a" || got.Key != "new" || got.OneOff || got.Version != 0 || got.Pin != "" {
			t.Fatalf("took %+v; want a, the least recently used, under the new key and no longer a one-off", got)
		}
		if live, busy := p.Holds("a"); live || busy {
			t.Fatal("the pool still says the old conversation's process is live")
		}
		if live, busy := p.Holds("new"); !live || !busy {
			t.Fatal("the new conversation does not hold the process")
		}
		if as.frozen.Load() {
			t.Fatal("a process handed out is still frozen")
		}
		// a is in use: with b alone kept the one-offs are under their limit.
		if l, _ := p.TakeOneOff("c", []string{"t1", "t2"}, "third"); l != nil {
			t.Fatal("a one-off was taken while fewer than MaxOneOff were kept")
		}
		a.OneOff = true
		time.Sleep(time.Millisecond)
		p.Put(a)
		if l, _ := p.TakeOneOff("c", []string{"t1", "t2"}, "third"); l != b {
			t.Fatalf("took %v, want b, now the least recently used", l)
		}
		p.Discard(b)

		// A process that served MaxRecycled conversations after its first
		// serves no more: another is taken, or none.
		c, _ := oneOff("c", "c", "t1", "t2")
		put(t, p, c)
		a.recycled = MaxRecycled
		if l, _ := p.TakeOneOff("c", []string{"t1", "t2"}, "fourth"); l != c {
			t.Fatalf("took %v, want c: a has served its most", l)
		}
		p.Discard(c)
		d, _ := oneOff("d", "c2")
		put(t, p, d)
		if l, _ := p.TakeOneOff("c", []string{"t1", "t2"}, "fifth"); l != nil {
			t.Fatalf("took %s, which has served its most", l.Key)
		}
	})
}

func TestDroppedRemembersTheLatest(t *testing.T) {
	var d dropped
	d.add("a", "s1")
	if !d.has("a", "s1") || d.has("a", "s2") || d.has("b", "s1") {
		t.Fatal("a dropped conversation is known by its key and session")
	}
	for i := range maxDropped {
		d.add(fmt.Sprint("k", i), "s")
	}
	if d.has("a", "s1") || !d.has("k0", "s") || !d.has(fmt.Sprint("k", maxDropped-1), "s") {
		t.Fatal("past the bound the oldest is forgotten, the rest kept")
	}
	d.add("k0", "s2") // dropped again from a later session
	if !d.has("k0", "s2") || len(d.order) != maxDropped {
		t.Fatalf("a conversation dropped twice is kept once (%d kept)", len(d.order))
	}
}
