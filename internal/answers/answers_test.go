package answers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func small() Limits {
	return Limits{Entries: 3, Bytes: 100, EntryBytes: 40, TTL: time.Minute, Waiters: 2}
}

// run claims key and saves body as its answer.
func run(t *testing.T, c *Cache, key, body string, calls ...string) bool {
	t.Helper()
	a, r, err := c.Begin(context.Background(), "s", key)
	if err != nil || a != nil || r == nil {
		t.Fatalf("Begin(%s) = %v %v %v, want a run", key, a, r, err)
	}
	defer r.Done()
	return r.Save(Answer{Status: 200, Body: []byte(body), Calls: calls})
}

func TestSavedAnswerIsReplayed(t *testing.T) {
	c := New(small(), nil)
	if !run(t, c, "k", "hello") {
		t.Fatal("not saved")
	}
	a, r, err := c.Begin(context.Background(), "s", "k")
	if err != nil || r != nil || a == nil || string(a.Body) != "hello" {
		t.Fatalf("Begin = %v %v %v", a, r, err)
	}
	// Another scope sees nothing.
	if a, r, _ := c.Begin(context.Background(), "other", "k"); a != nil || r == nil {
		t.Fatal("a scope saw another's answer")
	} else {
		r.Done()
	}
}

// has reports whether scope keeps an answer for key, without claiming it.
func has(c *Cache, scope, key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.scopes[scope]
	return s != nil && s.saved[key] != nil
}

// Each bound holds exactly at its limit: the answer that would pass it
// makes room by letting the scope's oldest go, and an answer larger than
// one may be is never kept.
func TestBoundsAtTheLimit(t *testing.T) {
	t.Run("entries", func(t *testing.T) {
		c := New(small(), nil)
		for i, k := range []string{"a", "b", "c"} {
			if !run(t, c, k, "x") {
				t.Fatalf("entry %d refused", i)
			}
		}
		if !run(t, c, "d", "x") {
			t.Fatal("a fourth entry was refused")
		}
		if n, _, _ := c.Stats("s"); n != 3 || has(c, "s", "a") || !has(c, "s", "d") {
			t.Fatalf("%d kept; the oldest kept: %v", n, has(c, "s", "a"))
		}
	})
	t.Run("total bytes", func(t *testing.T) {
		c := New(small(), nil)
		forty := strings.Repeat("x", 40)
		if !run(t, c, "a", forty) || !run(t, c, "b", forty) || !run(t, c, "c", strings.Repeat("x", 20)) {
			t.Fatal("answers up to exactly 100 bytes refused")
		}
		if n, b, _ := c.Stats("s"); n != 3 || b != 100 {
			t.Fatalf("%d answers of %d bytes at the bound", n, b)
		}
		c2 := New(small(), nil)
		run(t, c2, "a", forty)
		run(t, c2, "b", forty)
		if !run(t, c2, "c", strings.Repeat("x", 21)) {
			t.Fatal("the answer past 100 bytes was refused rather than making room")
		}
		if _, b, _ := c2.Stats("s"); b != 61 || has(c2, "s", "a") {
			t.Fatalf("%d bytes kept; the oldest kept: %v", b, has(c2, "s", "a"))
		}
	})
	t.Run("entry size", func(t *testing.T) {
		c := New(small(), nil)
		if !run(t, c, "a", strings.Repeat("x", 40)) {
			t.Fatal("an answer of exactly the entry bound refused")
		}
		if run(t, c, "b", strings.Repeat("x", 41)) {
			t.Fatal("an answer over the entry bound kept")
		}
	})
	t.Run("age", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := New(small(), nil)
			run(t, c, "a", "x")
			time.Sleep(time.Minute - time.Nanosecond)
			if a, _, _ := c.Begin(context.Background(), "s", "a"); a == nil {
				t.Fatal("gone before its age")
			}
			time.Sleep(time.Nanosecond)
			a, r, _ := c.Begin(context.Background(), "s", "a")
			if a != nil {
				t.Fatal("kept past its age")
			}
			r.Done()
			// Expired answers and their scopes go.
			run(t, c, "b", "x")
			run(t, c, "c", "x")
			time.Sleep(time.Minute)
			if scopes, n, b := c.Totals(); scopes != 0 || n != 0 || b != 0 {
				t.Fatalf("expired: %d scopes, %d answers, %d bytes kept", scopes, n, b)
			}
		})
	})
}

// Many scopes together stay within the totals, each at its own bound or
// below: the oldest answers of any scope make room, and the scopes of
// clients that stopped expire with their answers.
func TestTotalsHoldAcrossScopes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lim := Limits{Entries: 4, Bytes: 400, EntryBytes: 100, TTL: time.Minute, Waiters: 2, TotalEntries: 10, TotalBytes: 1000}
		c := New(lim, nil)
		save := func(scope, key string, size int) {
			t.Helper()
			_, r, err := c.Begin(context.Background(), scope, key)
			if err != nil || r == nil {
				t.Fatalf("Begin(%s, %s): %v", scope, key, err)
			}
			defer r.Done()
			if !r.Save(Answer{Body: []byte(strings.Repeat("x", size))}) {
				t.Fatalf("an answer of %d bytes refused", size)
			}
		}
		for i := range 150 {
			save(fmt.Sprintf("key-%d", i), "k", 80)
			if _, n, b := c.Totals(); n > lim.TotalEntries || b > lim.TotalBytes {
				t.Fatalf("after %d scopes: %d answers, %d bytes", i+1, n, b)
			}
		}
		scopes, n, b := c.Totals()
		if scopes != 10 || n != 10 || b != 800 {
			t.Fatalf("at the bound: %d scopes, %d answers, %d bytes", scopes, n, b)
		}
		// The newest are the ones kept.
		if !has(c, "key-149", "k") || has(c, "key-139", "k") {
			t.Fatal("the oldest answers were kept over the newest")
		}
		// The byte total binds too: 12 answers of 100 bytes cannot all fit.
		for i := range 12 {
			save("big", fmt.Sprintf("k%d", i), 100)
		}
		if _, n, b := c.Totals(); b > lim.TotalBytes || n > lim.TotalEntries {
			t.Fatalf("%d answers, %d bytes", n, b)
		}
		if n, b, _ := c.Stats("big"); n != 4 || b != 400 {
			t.Fatalf("one scope keeps %d answers, %d bytes, past its own bound", n, b)
		}
		time.Sleep(time.Minute)
		if scopes, n, b := c.Totals(); scopes != 0 || n != 0 || b != 0 {
			t.Fatalf("idle scopes did not expire: %d scopes, %d answers, %d bytes", scopes, n, b)
		}
	})
}

// Duplicates that arrive while the first runs wait for it and get its
// answer, even one over the bounds; a run that ends without an answer
// lets one waiter run.
func TestDuplicatesWaitForOneRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lim := small()
		lim.EntryBytes = 4
		c := New(lim, nil)
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
		if first.Save(Answer{Body: []byte("too big for the bound")}) {
			t.Fatal("saved over the entry bound")
		}
		first.Done()
		wg.Wait()
		if got[0] != "too big for the bound" || got[1] != got[0] {
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
		c := New(small(), nil)
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
		if n, _, running := c.Stats("s"); n != 0 || running != 0 {
			t.Fatalf("left %d answers, %d runs", n, running)
		}
	})
}

// Once a batch's results are being accepted, the request that asked for
// the batch is no longer replayed.
func TestRetire(t *testing.T) {
	c := New(small(), nil)
	run(t, c, "batch", "calls a and b", "toolu_a", "toolu_b")
	run(t, c, "other", "calls c", "toolu_c")
	c.Retire("s", []string{"toolu_b"})
	if a, r, _ := c.Begin(context.Background(), "s", "batch"); a != nil {
		t.Fatal("a retired batch was replayed")
	} else {
		r.Done()
	}
	if a, _, _ := c.Begin(context.Background(), "s", "other"); a == nil {
		t.Fatal("an unrelated answer was retired")
	}
	if _, b, _ := c.Stats("s"); b != int64(len("calls c")) {
		t.Fatalf("bytes %d after retiring", b)
	}
}
