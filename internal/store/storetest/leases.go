package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/store"
)

func testLeases(t *testing.T, e Engine) {
	s, c := open(t, e), ctx(t)
	a := store.LeaseClaim{Profile: "p", Key: "k", Token: "ta", Owner: owner("a"), Now: at(0), TTL: 10 * time.Second}
	g, err := s.Leases.Acquire(c, a)
	must(t, err)
	if !g.Taken || g.Held || g.Version != 0 {
		t.Fatalf("a free lease of a conversation never published: %+v", g)
	}
	b := a
	b.Token, b.Owner, b.Now = "tb", owner("b"), at(5*time.Second)
	g, err = s.Leases.Acquire(c, b)
	must(t, err)
	if holder := g.Holder; g.Taken || !g.Held || holder.Token != "ta" || holder.Owner != owner("a") || !holder.Expires.Equal(at(10*time.Second)) {
		t.Fatalf("a held lease: %+v", g)
	}
	if n, err := s.Leases.Held(c, "p", at(5*time.Second)); err != nil || n != 1 {
		t.Fatalf("held = %d, %v", n, err)
	}
	// Renewed, it outlives its first expiry.
	renewed, err := s.Leases.Renew(c, "p", "k", "ta", at(20*time.Second))
	must(t, err)
	if !renewed {
		t.Fatal("the holder could not renew")
	}
	b.Now = at(15 * time.Second)
	if g, _ := s.Leases.Acquire(c, b); g.Taken {
		t.Fatal("a renewed lease was taken at its first expiry")
	}
	if renewed, _ := s.Leases.Renew(c, "p", "k", "tb", at(30*time.Second)); renewed {
		t.Fatal("a non-holder renewed the lease")
	}
	// Released by another token: nothing happens.
	must(t, s.Leases.Release(c, "p", "k", "tb"))
	if n, _ := s.Leases.Held(c, "p", at(15*time.Second)); n != 1 {
		t.Fatal("a non-holder released the lease")
	}
	must(t, s.Leases.Release(c, "p", "k", "ta"))
	g, err = s.Leases.Acquire(c, b)
	must(t, err)
	if !g.Taken || g.Held {
		t.Fatalf("a released lease: %+v", g)
	}
	// Expired, it is anyone's; the old holder's renewal then fails.
	a.Token, a.Now = "ta2", at(40*time.Second)
	g, err = s.Leases.Acquire(c, a)
	must(t, err)
	if !g.Taken {
		t.Fatal("an expired lease was not taken")
	}
	if renewed, _ := s.Leases.Renew(c, "p", "k", "tb", at(50*time.Second)); renewed {
		t.Fatal("the lease's former holder renewed it")
	}
	if n, _ := s.Leases.Held(c, "p", at(100*time.Second)); n != 0 {
		t.Fatalf("an expired lease counts as held")
	}
}

func testLeaseTakeOver(t *testing.T, e Engine) {
	s, c := open(t, e), ctx(t)
	a := store.LeaseClaim{Profile: "p", Key: "k", Token: "ta", Owner: owner("a"), Now: at(0), TTL: time.Minute}
	_, err := s.Leases.Acquire(c, a)
	must(t, err)
	b := a
	b.Token, b.Owner = "tb", owner("b")
	if g, _ := s.Leases.TakeOver(c, b, "someone-else"); g.Taken {
		t.Fatal("a takeover from a token that does not hold the lease succeeded")
	}
	g, err := s.Leases.TakeOver(c, b, "ta")
	must(t, err)
	if !g.Taken {
		t.Fatal("the takeover failed")
	}
	if g, _ := s.Leases.Acquire(c, a); g.Holder.Token != "tb" {
		t.Fatalf("holder after the takeover: %+v", g)
	}
	// Two at once take a free lease: one wins.
	wins := make(chan bool, 8)
	for i := range 8 {
		go func() {
			cl := store.LeaseClaim{Profile: "p", Key: "race", Token: fmt.Sprint("r", i), Owner: owner("a"), Now: at(0), TTL: time.Minute}
			g, err := s.Leases.Acquire(c, cl)
			if err != nil {
				t.Error(err)
			}
			wins <- g.Taken
		}()
	}
	n := 0
	for range 8 {
		if <-wins {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d claims won one lease", n)
	}
}

func testJournal(t *testing.T, e Engine) {
	s, c := open(t, e), ctx(t)
	entry := store.JournalEntry{Hash: "h", Owner: owner("a"), Started: at(time.Second)}
	held, err := s.Journal.Begin(c, entry, at(0), 10)
	must(t, err)
	if held != nil {
		t.Fatalf("a new entry found %+v", held)
	}
	other := store.JournalEntry{Hash: "h", Owner: owner("b"), Started: at(2 * time.Second)}
	held, err = s.Journal.Begin(c, other, at(0), 10)
	must(t, err)
	if held == nil || held.Owner != owner("a") || !held.Started.Equal(at(time.Second)) {
		t.Fatalf("the running entry: %+v", held)
	}
	// Only its owner ends it.
	must(t, s.Journal.End(c, "h", owner("b")))
	if held, _ := s.Journal.Begin(c, other, at(0), 10); held == nil {
		t.Fatal("another owner ended the entry")
	}
	must(t, s.Journal.End(c, "h", owner("a")))
	if held, _ := s.Journal.Begin(c, other, at(0), 10); held != nil {
		t.Fatal("an ended entry is still there")
	}
	// An entry started at or before the expiry is forgotten.
	held, err = s.Journal.Begin(c, store.JournalEntry{Hash: "h", Owner: owner("c"), Started: at(time.Hour)}, at(2*time.Second), 10)
	must(t, err)
	if held != nil {
		t.Fatalf("an expired entry was kept: %+v", held)
	}
}

func testJournalBound(t *testing.T, e Engine) {
	s, c := open(t, e), ctx(t)
	for i := range 3 {
		_, err := s.Journal.Begin(c, store.JournalEntry{Hash: fmt.Sprint("h", i), Owner: owner("a"), Started: at(time.Second)}, at(0), 3)
		must(t, err)
	}
	_, err := s.Journal.Begin(c, store.JournalEntry{Hash: "h3", Owner: owner("a"), Started: at(time.Second)}, at(0), 3)
	wantErr(t, err, store.ErrFull)
	// The same hash again is reported running, full or not.
	held, err := s.Journal.Begin(c, store.JournalEntry{Hash: "h0", Owner: owner("b"), Started: at(time.Second)}, at(0), 3)
	must(t, err)
	if held == nil {
		t.Fatal("a running entry was not found at the bound")
	}
}

func testBench(t *testing.T, e Engine) {
	s, c := open(t, e), ctx(t)
	until, err := s.Bench.Put(c, "a", at(time.Minute))
	must(t, err)
	if !until.Equal(at(time.Minute)) {
		t.Fatalf("until %v", until)
	}
	// A shorter bench never shortens a longer one.
	until, err = s.Bench.Put(c, "a", at(time.Second))
	must(t, err)
	if !until.Equal(at(time.Minute)) {
		t.Fatalf("a shorter bench moved the end to %v", until)
	}
	until, _ = s.Bench.Put(c, "a", at(2*time.Minute))
	if !until.Equal(at(2 * time.Minute)) {
		t.Fatalf("a longer bench ends at %v", until)
	}
	_, err = s.Bench.Put(c, "b", at(30*time.Second))
	must(t, err)
	benched, err := s.Bench.Benched(c, at(45*time.Second))
	must(t, err)
	if len(benched) != 1 || !benched["a"].Equal(at(2*time.Minute)) {
		t.Fatalf("benched = %v", benched)
	}
	// The operator's unbench ends it at once, and a later bench holds.
	must(t, s.Bench.Clear(c, "a"))
	if benched, _ = s.Bench.Benched(c, at(45*time.Second)); len(benched) != 0 {
		t.Fatalf("after clear, benched = %v", benched)
	}
	until, _ = s.Bench.Put(c, "a", at(time.Minute))
	if !until.Equal(at(time.Minute)) {
		t.Fatalf("a bench after clear ends at %v", until)
	}
}

// A profile's figures are kept when newer than those kept: an older
// observation arriving late changes nothing, and figures without windows
// clear what was known.
func testFigures(t *testing.T, e Engine) {
	s, c := open(t, e), ctx(t)
	first := store.PlanFigures{ObservedAt: at(time.Minute), Windows: []store.PlanWindow{
		{Name: "five_hour", Used: 0.31, ResetsAt: at(3 * time.Hour)},
		{Name: "seven_day", Used: 1, ResetsAt: at(90 * time.Hour), Overage: true},
	}}
	stored, err := s.Figures.Put(c, "a", first)
	must(t, err)
	if !stored {
		t.Fatal("the first figures were not kept")
	}
	stale := store.PlanFigures{ObservedAt: at(time.Second), Windows: []store.PlanWindow{{Name: "five_hour", Used: 0.9}}}
	if stored, err = s.Figures.Put(c, "a", stale); err != nil || stored {
		t.Fatalf("older figures kept: %v %v", stored, err)
	}
	_, err = s.Figures.Put(c, "b", store.PlanFigures{ObservedAt: at(2 * time.Minute)})
	must(t, err)
	all, err := s.Figures.All(c)
	must(t, err)
	a := all["a"]
	if len(all) != 2 || !a.ObservedAt.Equal(first.ObservedAt) || len(a.Windows) != 2 || a.Windows[0].Used != 0.31 ||
		!a.Windows[0].ResetsAt.Equal(at(3*time.Hour)) || !a.Windows[1].Overage || len(all["b"].Windows) != 0 {
		t.Fatalf("figures %+v", all)
	}
	if stored, _ = s.Figures.Put(c, "a", store.PlanFigures{ObservedAt: at(3 * time.Minute)}); !stored {
		t.Fatal("newer empty figures were not kept")
	}
	if all, _ = s.Figures.All(c); len(all["a"].Windows) != 0 {
		t.Fatalf("cleared figures %+v", all["a"])
	}
}

func testStarts(t *testing.T, e Engine) {
	s, c := open(t, e), ctx(t)
	if _, ok, err := s.Starts.Top(c, "p", at(0)); err != nil || ok {
		t.Fatalf("a fresh store has a most used start (%v, %v)", ok, err)
	}
	must(t, s.Starts.Record(c, "p", "a", []byte("A1"), at(time.Second)))
	must(t, s.Starts.Record(c, "p", "b", []byte("B"), at(2*time.Second)))
	must(t, s.Starts.Record(c, "p", "a", []byte("A2"), at(3*time.Second)))
	must(t, s.Starts.Record(c, "q", "c", []byte("C"), at(3*time.Second)))
	must(t, s.Starts.Record(c, "q", "c", []byte("C"), at(3*time.Second)))
	must(t, s.Starts.Record(c, "q", "c", []byte("C"), at(3*time.Second)))
	// The contract used most, with the options it was used with last;
	// each profile apart.
	top, ok, err := s.Starts.Top(c, "p", at(0))
	must(t, err)
	if !ok || string(top) != "A2" {
		t.Fatalf("top = %q, %v", top, ok)
	}
	// Starts older than since are forgotten.
	top, ok, _ = s.Starts.Top(c, "p", at(2*time.Second))
	if !ok || string(top) != "A2" {
		t.Fatalf("top since 2s = %q, %v", top, ok)
	}
	top, ok, _ = s.Starts.Top(c, "p", at(4*time.Second))
	if ok {
		t.Fatalf("a start older than since was kept: %q", top)
	}
	if top, _, _ = s.Starts.Top(c, "q", at(0)); string(top) != "C" {
		t.Fatalf("profile q: %q", top)
	}
}

func testHosts(t *testing.T, e Engine) {
	s, c := open(t, e), ctx(t)
	h := store.Host{Owner: owner("a"), Addr: "http://127.0.0.2:3456", Version: "v1", Started: at(0), Expires: at(15 * time.Second),
		State: store.HostServing, Live: 3, Running: 1}
	must(t, s.Hosts.Beat(c, h))
	// A later beat says what changed: its expiry, its state, its load.
	h.Expires, h.State, h.Live, h.Running = at(30*time.Second), store.HostDraining, 2, 0
	must(t, s.Hosts.Beat(c, h))
	got, ok, err := s.Hosts.Get(c, owner("a"))
	must(t, err)
	if !ok || got != h {
		t.Fatalf("heartbeat %v: %+v", ok, got)
	}
	if _, ok, _ := s.Hosts.Get(c, store.Owner{Host: "a", Incarnation: "2"}); ok {
		t.Fatal("another incarnation's heartbeat was found")
	}
	must(t, s.Hosts.Beat(c, store.Host{Owner: owner("b"), Started: at(0), Expires: at(5 * time.Second)}))
	list, err := s.Hosts.List(c, at(10*time.Second))
	must(t, err)
	if len(list) != 1 || list[0].Owner != owner("a") {
		t.Fatalf("hosts = %+v (b expired before the forget time)", list)
	}
	must(t, s.Hosts.Leave(c, owner("a")))
	if _, ok, _ := s.Hosts.Get(c, owner("a")); ok {
		t.Fatal("a host that left is still there")
	}
}

func testSignals(t *testing.T, e Engine) {
	s, another := e.New(t, 0, 0)
	c := ctx(t)
	listeners := []*store.Store{s}
	if e.SignalsAcross {
		listeners = append(listeners, another())
	}
	var chans []<-chan string
	for _, l := range listeners {
		ch, stop := l.Signals.Listen("cancel")
		t.Cleanup(stop)
		chans = append(chans, ch)
		other, stopOther := l.Signals.Listen("events")
		t.Cleanup(stopOther)
		go func() {
			for p := range other {
				t.Errorf("a listener of another topic heard %q", p)
			}
		}()
	}
	// A listener may come up a moment after Listen returns (PostgreSQL's
	// LISTEN on its own connection): send until every one has heard.
	for i, ch := range chans {
		deadline := time.After(10 * time.Second)
		for heard := false; !heard; {
			must(t, s.Signals.Notify(c, "cancel", "resp_1"))
			select {
			case p := <-ch:
				if p != "resp_1" {
					t.Fatalf("listener %d heard %q", i, p)
				}
				heard = true
			case <-time.After(100 * time.Millisecond):
			case <-deadline:
				t.Fatalf("listener %d heard nothing", i)
			}
		}
	}
}

// testShared: what one store writes, another on the same database reads.
func testShared(t *testing.T, e Engine) {
	a, another := e.New(t, 0, 0)
	b := another()
	c := ctx(t)
	_, err := a.Conversations.Publish(c, conversation("p", "k"), store.Publish{Now: at(0), Consumed: []string{"t"}})
	must(t, err)
	got, ok, err := b.Conversations.Load(c, "p", "k")
	must(t, err)
	if !ok || got.Version != 1 {
		t.Fatalf("the other store loads %v %+v", ok, got)
	}
	ok, err = b.Answers.Put(c, store.SavedAnswer{Scope: "s", Key: "r", Status: 200, Header: []byte(`{}`), Body: []byte("hi"), Saved: at(0)}, limits())
	must(t, err)
	if !ok {
		t.Fatal("not saved")
	}
	ans, ok, err := a.Answers.Get(c, "s", "r", at(time.Second))
	must(t, err)
	if !ok || string(ans.Body) != "hi" {
		t.Fatalf("the other store's answer: %v %+v", ok, ans)
	}
}

// A lease taken, by a free claim or a takeover, says the conversation's
// version as it was taken, so a turn knows whether what it read before
// waiting still stands.
func testLeaseGrantVersion(t *testing.T, e Engine) {
	s, c := open(t, e), ctx(t)
	a := store.LeaseClaim{Profile: "p", Key: "k", Token: "ta", Owner: owner("a"), Now: at(0), TTL: time.Minute}
	g, err := s.Leases.Acquire(c, a)
	must(t, err)
	_, err = s.Conversations.Publish(c, conversation("p", "k"), store.Publish{Fence: "ta", Now: at(0)})
	must(t, err)
	_, err = s.Conversations.Publish(c, conversation("p", "k"), store.Publish{Prev: 1, Fence: "ta", Now: at(time.Second)})
	must(t, err)
	// Another profile's row of the same key is not this lease's.
	_, err = s.Conversations.Publish(c, conversation("q", "k"), store.Publish{Now: at(time.Second)})
	must(t, err)
	must(t, s.Leases.Release(c, "p", "k", "ta"))
	b := a
	b.Token, b.Owner = "tb", owner("b")
	if g, err = s.Leases.Acquire(c, b); err != nil || !g.Taken || g.Version != 2 {
		t.Fatalf("a lease taken after two publishes: %+v, %v", g, err)
	}
	_, err = s.Conversations.Publish(c, conversation("p", "k"), store.Publish{Prev: 2, Fence: "tb", Now: at(2 * time.Second)})
	must(t, err)
	a.Token = "ta2"
	if g, err = s.Leases.TakeOver(c, a, "tb"); err != nil || !g.Taken || g.Version != 3 {
		t.Fatalf("a lease taken over after three publishes: %+v, %v", g, err)
	}
	other := a
	other.Key, other.Token = "never", "tn"
	if g, err = s.Leases.Acquire(c, other); err != nil || !g.Taken || g.Version != 0 {
		t.Fatalf("the lease of a conversation never published: %+v, %v", g, err)
	}
}

// Sinks are added once by name and removed; an alert's key is claimed
// once (whichever host comes first sends it), and old records go.
func testAlerts(t *testing.T, e Engine) {
	s, c := open(t, e), ctx(t)
	sink := store.AlertSink{Name: "ops", URL: "https://example.invalid/hook", Format: "slack", Secret: "s", Created: at(0)}
	must(t, s.Alerts.AddSink(c, sink))
	if err := s.Alerts.AddSink(c, sink); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("a second sink of one name: %v", err)
	}
	sinks, err := s.Alerts.Sinks(c)
	must(t, err)
	if len(sinks) != 1 || sinks[0] != sink {
		t.Fatalf("sinks %+v", sinks)
	}
	a := store.SentAlert{Key: "window:p:five_hour:80", Kind: "window", Profile: "p", Message: "p's five_hour window is 80% used", Host: "h1", At: at(time.Minute)}
	first, err := s.Alerts.Claim(c, a, time.Hour)
	must(t, err)
	a.Host = "h2"
	second, err := s.Alerts.Claim(c, a, time.Hour)
	must(t, err)
	if !first || second {
		t.Fatalf("claims %v, %v: want the first alone", first, second)
	}
	later := store.SentAlert{Key: "benched:p", Kind: "benched", Profile: "p", Message: "p benched", Host: "h2", At: at(2 * time.Hour)}
	if ok, err := s.Alerts.Claim(c, later, time.Hour); err != nil || !ok {
		t.Fatalf("claim %v %v", ok, err)
	}
	recent, err := s.Alerts.Recent(c, 10)
	must(t, err)
	if len(recent) != 1 || recent[0].Key != later.Key || !recent[0].At.Equal(later.At) {
		t.Fatalf("recent %+v: the old one should be gone", recent)
	}
	must(t, s.Alerts.RemoveSink(c, "ops"))
	if err := s.Alerts.RemoveSink(c, "ops"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("removing a missing sink: %v", err)
	}
}
