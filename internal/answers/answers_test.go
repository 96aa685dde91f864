package answers

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/meridian-gw/meridian/internal/store"
	"github.com/meridian-gw/meridian/internal/store/sqlite"
	"github.com/meridian-gw/meridian/internal/store/sqlstore"
)

// memory is the saved answers as a map, for the tests of the runs: the
// store's own bounds are the conformance suite's (package storetest).
type memory struct {
	mu sync.Mutex
	m  map[[2]string]store.SavedAnswer
}

func (m *memory) Get(_ context.Context, scope, key string, _ time.Time) (store.SavedAnswer, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.m[[2]string{scope, key}]
	return a, ok, nil
}

func (m *memory) Put(_ context.Context, a store.SavedAnswer, lim store.AnswerLimits) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(a.Body) > lim.EntryBytes {
		return false, nil
	}
	m.m[[2]string{a.Scope, a.Key}] = a
	return true, nil
}

func (m *memory) Retire(_ context.Context, scope string, calls []string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, a := range m.m {
		if k[0] == scope && slices.ContainsFunc(a.Calls, func(c string) bool { return slices.Contains(calls, c) }) {
			delete(m.m, k)
		}
	}
	return nil
}

func (m *memory) Usage(context.Context, string, time.Time) (store.AnswerUsage, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return store.AnswerUsage{Entries: len(m.m)}, nil
}

func small() Limits {
	return Limits{Entries: 3, Bytes: 100, EntryBytes: 40, TTL: time.Minute, Waiters: 2}
}

func newCache() *Cache { return New(&memory{m: map[[2]string]store.SavedAnswer{}}, small(), nil) }

// run claims key and saves body as its answer.
func run(t *testing.T, c *Cache, key, body string, calls ...string) bool {
	t.Helper()
	a, r, err := c.Begin(context.Background(), "s", key)
	if err != nil || a != nil || r == nil {
		t.Fatalf("Begin(%s) = %v %v %v, want a run", key, a, r, err)
	}
	defer r.Done()
	kept, err := r.Save(Answer{Status: 200, Header: map[string][]string{"Content-Type": {"application/json"}}, Body: []byte(body), Calls: calls})
	if err != nil {
		t.Fatal(err)
	}
	return kept
}

func TestSavedAnswerIsReplayed(t *testing.T) {
	c := newCache()
	if !run(t, c, "k", "hello") {
		t.Fatal("not saved")
	}
	a, r, err := c.Begin(context.Background(), "s", "k")
	if err != nil || r != nil || a == nil || string(a.Body) != "hello" || a.Header["Content-Type"][0] != "application/json" {
		t.Fatalf("Begin = %v %v %v", a, r, err)
	}
	// Another scope sees nothing.
	if a, r, _ := c.Begin(context.Background(), "other", "k"); a != nil || r == nil {
		t.Fatal("a scope saw another's answer")
	} else {
		r.Done()
	}
}

// Another host's cache on the same store replays what this one saved.
func TestAnswersAreShared(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.db")
	var caches []*Cache
	for range 2 {
		db, err := sqlite.Open(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		st := sqlite.NewStore(db, path, sqlstore.Options{})
		t.Cleanup(func() { _ = st.Close() })
		caches = append(caches, New(st.Answers, DefaultLimits(), nil))
	}
	if !run(t, caches[0], "k", "answered on a", "toolu_1") {
		t.Fatal("not saved")
	}
	a, r, err := caches[1].Begin(context.Background(), "s", "k")
	if err != nil || r != nil || a == nil || string(a.Body) != "answered on a" || !slices.Equal(a.Calls, []string{"toolu_1"}) {
		t.Fatalf("the other host's Begin = %+v %v %v", a, r, err)
	}
	if err := caches[1].Retire(context.Background(), "s", []string{"toolu_1"}); err != nil {
		t.Fatal(err)
	}
	if a, r, _ := caches[0].Begin(context.Background(), "s", "k"); a != nil {
		t.Fatal("an answer retired on the other host was replayed")
	} else {
		r.Done()
	}
}

// Duplicates that arrive while the first runs wait for it and get its
// answer, even one over the bounds; a run that ends without an answer
// lets one waiter run.
func TestDuplicatesWaitForOneRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCache()
		_, first, _ := c.Begin(context.Background(), "s", "k")
		var wg sync.WaitGroup
		got := make([]string, 2)
		for i := range 2 {
			wg.Go(func() {
				a, r, err := c.Begin(context.Background(), "s", "k")
				if err != nil || r != nil {
					t.Errorf("waiter %d: %v %v", i, r, err)
					return
				}
				got[i] = string(a.Body)
			})
		}
		synctest.Wait()
		if _, _, err := c.Begin(context.Background(), "s", "k"); !errors.Is(err, ErrBusy) {
			t.Fatalf("a third waiter: %v", err)
		}
		if kept, _ := first.Save(Answer{Body: []byte("far too big for the entry bound of forty bytes")}); kept {
			t.Fatal("saved over the entry bound")
		}
		first.Done()
		wg.Wait()
		if got[0] != "far too big for the entry bound of forty bytes" || got[1] != got[0] {
			t.Fatalf("waiters got %q", got)
		}

		// A run with no answer: the waiter becomes the run.
		_, first, _ = c.Begin(context.Background(), "s", "j")
		next := make(chan *Run)
		go func() {
			_, r, _ := c.Begin(context.Background(), "s", "j")
			next <- r
		}()
		synctest.Wait()
		first.Done()
		if r := <-next; r == nil {
			t.Fatal("the waiter of a failed run did not run")
		} else {
			r.Done()
		}
	})
}

func TestWaiterLeavesWithItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCache()
		_, first, _ := c.Begin(context.Background(), "s", "k")
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { _, _, err := c.Begin(ctx, "s", "k"); done <- err }()
		synctest.Wait()
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("waiter: %v", err)
		}
		first.Done()
		if n := c.Running(); n != 0 {
			t.Fatalf("left %d runs", n)
		}
	})
}

// Once a batch's results are being accepted, the request that asked for
// the batch is no longer replayed.
func TestRetire(t *testing.T) {
	c := newCache()
	run(t, c, "batch", "calls a and b", "toolu_a", "toolu_b")
	run(t, c, "other", "calls c", "toolu_c")
	if err := c.Retire(context.Background(), "s", []string{"toolu_b"}); err != nil {
		t.Fatal(err)
	}
	if a, r, _ := c.Begin(context.Background(), "s", "batch"); a != nil {
		t.Fatal("a retired batch was replayed")
	} else {
		r.Done()
	}
	if a, _, _ := c.Begin(context.Background(), "s", "other"); a == nil {
		t.Fatal("an unrelated answer was retired")
	}
}
