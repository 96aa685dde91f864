package session

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/meridian-gw/meridian/internal/cluster"
	"github.com/meridian-gw/meridian/internal/lineage"
	"github.com/meridian-gw/meridian/internal/store"
	"github.com/meridian-gw/meridian/internal/store/sqlite"
	"github.com/meridian-gw/meridian/internal/store/sqlstore"
)

// fixture is one "process" on a database file: its handle (for the
// faults tests inject), the store over it, and its host registry.
type fixture struct {
	db     *sql.DB
	st     *store.Store
	owners *cluster.Registry
}

func openFixture(t *testing.T, path string, opts sqlstore.Options) fixture {
	t.Helper()
	db, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	st := sqlite.NewStore(db, path, opts)
	t.Cleanup(func() { _ = st.Close() })
	owners := cluster.New(cluster.Config{Hosts: st.Hosts, Host: "test-host"})
	if err := owners.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(owners.Close)
	return fixture{db: db, st: st, owners: owners}
}

func newStore(t *testing.T, now func() time.Time) *Store {
	return NewStore(openFixture(t, filepath.Join(t.TempDir(), "m.db"), sqlstore.Options{}).st.Conversations, now)
}

func newLeases(t *testing.T, f fixture, ttl time.Duration) *Leases {
	return NewLeases(f.st.Leases, f.owners, ttl, nil)
}

// insertLease writes a lease row as another holder would have.
func insertLease(t *testing.T, db *sql.DB, key string, holder store.Owner, expires time.Time) {
	t.Helper()
	if _, err := db.Exec(`INSERT INTO turn_leases (profile, key, token, host, incarnation, expires_at) VALUES ('p', ?, 'their-token', ?, ?, ?)`,
		key, holder.Host, holder.Incarnation, expires.UnixMilli()); err != nil {
		t.Fatal(err)
	}
}

func digests(ns ...byte) []lineage.Digest {
	out := make([]lineage.Digest, len(ns))
	for i, n := range ns {
		out[i][0] = n
	}
	return out
}

func TestPublishIsCompareAndSwap(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, nil)
	m, err := s.Load(ctx, "default", "conv")
	if err != nil || m.Version != 0 || len(m.State.Messages) != 0 {
		t.Fatalf("fresh load: %+v %v", m, err)
	}
	m.Client, m.SessionID, m.Cwd, m.Model = "generic", "sid-1", "/w", "model"
	m.State = lineage.State{Messages: digests(1, 2), Pins: []string{"", "u1"}, Tail: digests(9)}
	v, err := s.Publish(ctx, m, 0, lineage.Diverged, Turn{})
	if err != nil || v != 1 {
		t.Fatalf("first publish: %d %v", v, err)
	}
	if _, err := s.Publish(ctx, m, 0, lineage.Diverged, Turn{}); !errors.Is(err, ErrConflict) {
		t.Fatalf("second insert: %v, want ErrConflict", err)
	}
	got, err := s.Load(ctx, "default", "conv")
	if err != nil || got.Version != 1 || got.SessionID != "sid-1" || got.State.Pins[1] != "u1" ||
		got.State.Messages[1] != digests(2)[0] || got.State.Tail[0] != digests(9)[0] || got.Counts.Divergences != 1 {
		t.Fatalf("loaded %+v %v", got, err)
	}

	// Many writers that all loaded version 1: exactly one wins.
	var wins atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			next := got
			next.State = lineage.State{Messages: digests(1, 2, 3, 4), Pins: []string{"", "u1", "", "u2"}}
			if _, err := s.Publish(ctx, next, 1, lineage.Continuation, Turn{}); err == nil {
				wins.Add(1)
			} else if !errors.Is(err, ErrConflict) {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("%d publishers won", wins.Load())
	}
	final, _ := s.Load(ctx, "default", "conv")
	if final.Version != 2 || final.Counts.Continuations != 1 || len(final.State.Messages) != 4 {
		t.Fatalf("final %+v", final)
	}
	list, err := s.List(ctx, "default", 10)
	if err != nil || len(list) != 1 || list[0].Key != "conv" {
		t.Fatalf("list %+v %v", list, err)
	}
	// Another profile's list holds none of it.
	if other, err := s.List(ctx, "other", 10); err != nil || len(other) != 0 {
		t.Fatalf("another profile's list: %+v %v", other, err)
	}
}

// Two "processes": two database handles on one file, each with its own
// leases.
func TestLeasesAcrossProcesses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "m.db")
		a := newLeases(t, openFixture(t, path, sqlstore.Options{}), time.Second)
		b := newLeases(t, openFixture(t, path, sqlstore.Options{}), time.Second)
		ctx := context.Background()

		la, err := a.Acquire(ctx, "p", "k", time.Second)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_, err = b.Acquire(ctx, "p", "k", 200*time.Millisecond)
		var busy *BusyError
		if !errors.As(err, &busy) || busy.RetryAfter < time.Second/2 || time.Since(start) < 200*time.Millisecond {
			t.Fatalf("second acquire: %v after %v", err, time.Since(start))
		}
		// Renewal keeps it held past its TTL.
		time.Sleep(1500 * time.Millisecond)
		if _, err := b.Acquire(ctx, "p", "k", 100*time.Millisecond); !errors.As(err, &busy) {
			t.Fatalf("lease lapsed while held: %v", err)
		}
		// A waiter gets it as soon as it is released.
		got := make(chan error, 1)
		go func() {
			lb, err := b.Acquire(ctx, "p", "k", 5*time.Second)
			if err == nil {
				lb.Release()
			}
			got <- err
		}()
		synctest.Wait() // the waiter waits
		la.Release()
		if err := <-got; err != nil {
			t.Fatal(err)
		}
		// Another key is independent.
		lx, err := a.Acquire(ctx, "p", "other", 10*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		lx.Release()
	})
}

func TestExpiredLeaseOfACrashedHolderIsTakenOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := openFixture(t, filepath.Join(t.TempDir(), "m.db"), sqlstore.Options{})
		insertLease(t, f.db, "k", store.Owner{Host: "elsewhere", Incarnation: "1"}, time.Now().Add(-time.Second))
		l, err := newLeases(t, f, time.Second).Acquire(context.Background(), "p", "k", 100*time.Millisecond)
		if err != nil {
			t.Fatalf("expired lease not taken over: %v", err)
		}
		l.Release()
	})
}

func TestLocalWaitersLeaveOnCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLeases(t, openFixture(t, filepath.Join(t.TempDir(), "m.db"), sqlstore.Options{}), time.Second)
		held, err := l.Acquire(context.Background(), "p", "k", time.Second)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { _, err := l.Acquire(ctx, "p", "k", time.Minute); done <- err }()
		synctest.Wait() // the waiter waits
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v", err)
		}
		held.Release()
		l.mu.Lock()
		n := len(l.local)
		l.mu.Unlock()
		if n != 0 {
			t.Fatalf("%d local locks left behind", n)
		}
	})
}

func TestStoreKeepsABoundedNumberOfConversations(t *testing.T) {
	ctx := context.Background()
	clock := time.Unix(1000, 0)
	f := openFixture(t, filepath.Join(t.TempDir(), "m.db"), sqlstore.Options{MaxConversations: 3})
	s := NewStore(f.st.Conversations, func() time.Time { clock = clock.Add(time.Second); return clock })
	for i := range 5 {
		m := Mapping{Profile: "p", Key: string(rune('a' + i)), SessionID: "s", State: lineage.State{Messages: digests(1), Pins: []string{"x"}}}
		if _, err := s.Publish(ctx, m, 0, lineage.Diverged, Turn{}); err != nil {
			t.Fatal(err)
		}
	}
	list, _ := s.List(ctx, "p", 10)
	if len(list) != 3 || list[0].Key != "e" || list[2].Key != "c" {
		t.Fatalf("kept %v", list)
	}
}

// A lease whose holder ran on this host in a process that is gone is free
// at once, not at its expiry: a restarted meridian's first turn does not
// wait out a dead process's lease. A live holder's lease is not touched,
// and a 409's wait stays short.
func TestLeaseOfADeadProcessIsTakenOverAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := openFixture(t, filepath.Join(t.TempDir(), "m.db"), sqlstore.Options{})
		l := newLeases(t, f, time.Minute)
		insertLease(t, f.db, "k", store.Owner{Host: "test-host", Incarnation: "999999999:1"}, time.Now().Add(time.Minute))
		start := time.Now()
		lease, err := l.Acquire(context.Background(), "p", "k", 10*time.Second)
		if err != nil || time.Since(start) > time.Second {
			t.Fatalf("a dead holder's lease: %v after %v", err, time.Since(start))
		}
		lease.Release()

		insertLease(t, f.db, "k2", f.owners.Self(), time.Now().Add(time.Minute)) // this process: alive
		other := newLeases(t, f, time.Minute)
		_, err = other.Acquire(context.Background(), "p", "k2", 100*time.Millisecond)
		var busy *BusyError
		if !errors.As(err, &busy) || busy.RetryAfter > 2*time.Second {
			t.Fatalf("a live holder's lease: %v, want busy with a short wait", err)
		}
	})
}

// A lease another holder took (after it lapsed) is reported lost, so its
// turn can stop and publish nothing.
func TestLostLeaseIsReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := openFixture(t, filepath.Join(t.TempDir(), "m.db"), sqlstore.Options{})
		l := newLeases(t, f, 300*time.Millisecond)
		lease, err := l.Acquire(context.Background(), "p", "k", time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer lease.Release()
		select {
		case <-lease.Lost():
			t.Fatal("a held lease reported lost")
		case <-time.After(400 * time.Millisecond): // renewals kept it
		}
		if _, err := f.db.Exec(`UPDATE turn_leases SET token = 'another' WHERE key = 'k'`); err != nil {
			t.Fatal(err)
		}
		select {
		case <-lease.Lost():
		case <-time.After(2 * time.Second):
			t.Fatal("a taken-over lease was not reported lost")
		}
	})
}

// A lease that cannot be renewed for as long as it lives (the store
// refuses every write) is reported lost, as one taken over is: past its
// expiry another holder may have it.
func TestUnrenewableLeaseIsLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := openFixture(t, filepath.Join(t.TempDir(), "m.db"), sqlstore.Options{})
		l := newLeases(t, f, 300*time.Millisecond)
		lease, err := l.Acquire(context.Background(), "p", "k", time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer lease.Release()
		if _, err := f.db.Exec(`CREATE TRIGGER refuse BEFORE UPDATE ON turn_leases BEGIN SELECT RAISE(ABORT, 'disk says no'); END`); err != nil {
			t.Fatal(err)
		}
		select {
		case <-lease.Lost():
		case <-time.After(3 * time.Second):
			t.Fatal("a lease that could not be renewed past its expiry was not reported lost")
		}
	})
}

// A database fault is an error, not a busy conversation: a 409 would send
// the client into retries that cannot succeed.
func TestLeaseFaultIsNotBusy(t *testing.T) {
	f := openFixture(t, filepath.Join(t.TempDir(), "m.db"), sqlstore.Options{})
	if _, err := f.db.Exec(`DROP TABLE turn_leases`); err != nil {
		t.Fatal(err)
	}
	_, err := newLeases(t, f, time.Second).Acquire(context.Background(), "p", "k", 100*time.Millisecond)
	var busy *BusyError
	if err == nil || errors.As(err, &busy) || !strings.Contains(err.Error(), "turn lease") {
		t.Fatalf("Acquire on a broken database = %v", err)
	}
}

// The store's clean-up writes used to drop their errors: a prune that
// fails (here a trigger refuses every delete) is reported by the publish
// that ran it, beside the version of the mapping it did store.
func TestFailedPrunesAreReported(t *testing.T) {
	ctx := context.Background()
	f := openFixture(t, filepath.Join(t.TempDir(), "m.db"), sqlstore.Options{MaxConversations: 1})
	if _, err := f.db.Exec(`CREATE TRIGGER refuse BEFORE DELETE ON conversations BEGIN SELECT RAISE(ABORT, 'disk says no'); END`); err != nil {
		t.Fatal(err)
	}
	s := NewStore(f.st.Conversations, nil)
	for i, key := range []string{"a", "b"} {
		m := Mapping{Profile: "p", Key: key, SessionID: "s", State: lineage.State{Messages: digests(1), Pins: []string{"x"}}}
		version, err := s.Publish(ctx, m, 0, lineage.Diverged, Turn{})
		if i == 0 && err != nil {
			t.Fatal(err)
		}
		if i == 1 && (err == nil || !strings.Contains(err.Error(), "prune conversations")) {
			t.Fatalf("Publish with a failing prune = %v", err)
		}
		// The mapping itself was stored: the version says so, and it is
		// there to load.
		if got, _ := s.Load(ctx, "p", key); version != 1 || got.Version != 1 {
			t.Fatalf("publish of %s with a failing prune: version %d, stored %d", key, version, got.Version)
		}
	}
}

// Latest is the mapping of the profile that answered a conversation last.
func TestLatestIsTheLatestProfile(t *testing.T) {
	ctx := context.Background()
	clock := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	s := newStore(t, func() time.Time { return clock })
	if m, err := s.Latest(ctx, "conv"); err != nil || m.Profile != "" || m.Version != 0 || m.Key != "conv" {
		t.Fatalf("unknown conversation: %+v %v", m, err)
	}
	for _, profile := range []string{"a", "b"} {
		m, _ := s.Load(ctx, profile, "conv")
		m.Client, m.SessionID = "generic", "sid-"+profile
		if _, err := s.Publish(ctx, m, 0, lineage.Diverged, Turn{}); err != nil {
			t.Fatal(err)
		}
		clock = clock.Add(time.Second)
	}
	if m, err := s.Latest(ctx, "conv"); err != nil || m.Profile != "b" || m.SessionID != "sid-b" {
		t.Fatalf("latest %+v %v, want b's", m, err)
	}
}

// One conversation's queue is bounded: with the lease held and as many
// turns waiting as may, the next is refused at once, crowded, with a
// wait; the waiters still get their turns.
func TestWaitersOfOneConversationAreBounded(t *testing.T) {
	l := newLeases(t, openFixture(t, filepath.Join(t.TempDir(), "m.db"), sqlstore.Options{}), time.Second)
	l.MaxWaiters = 3
	held, err := l.Acquire(context.Background(), "p", "k", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var waiting sync.WaitGroup
	for range 3 {
		waiting.Go(func() {
			lease, err := l.Acquire(context.Background(), "p", "k", time.Minute)
			if err != nil {
				t.Errorf("a waiter within the bound: %v", err)
				return
			}
			lease.Release()
		})
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		l.mu.Lock()
		refs := l.local["p\x00k"].refs
		l.mu.Unlock()
		if refs == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d holders and waiters, want 4", refs)
		}
		time.Sleep(5 * time.Millisecond)
	}
	began := time.Now()
	_, err = l.Acquire(context.Background(), "p", "k", time.Minute)
	var busy *BusyError
	if !errors.As(err, &busy) || !busy.Crowded || busy.RetryAfter <= 0 || time.Since(began) > time.Second {
		t.Fatalf("a turn past the bound: %v after %v", err, time.Since(began))
	}
	// Another conversation is not crowded by this one.
	other, err := l.Acquire(context.Background(), "p", "other", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	other.Release()
	held.Release()
	waiting.Wait()
}
