package storetest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/store"
)

func limits() store.AnswerLimits {
	return store.AnswerLimits{Entries: 3, Bytes: 1000, EntryBytes: 400, TTL: time.Minute, TotalEntries: 5, TotalBytes: 2000}
}

func answer(scope, key string, size int, saved time.Time, calls ...string) store.SavedAnswer {
	return store.SavedAnswer{Scope: scope, Key: key, Status: 200, Header: []byte(`{"Content-Type":["application/json"]}`),
		Body: []byte(strings.Repeat("b", size)), Calls: calls, Saved: saved}
}

// kept lists which of keys k0…k9 a scope keeps at now.
func kept(t *testing.T, s *store.Store, scope string, now time.Time) []string {
	t.Helper()
	var out []string
	for i := range 10 {
		if _, ok, err := s.Answers.Get(ctx(t), scope, fmt.Sprint("k", i), now); err != nil {
			t.Fatal(err)
		} else if ok {
			out = append(out, fmt.Sprint("k", i))
		}
	}
	return out
}

func testAnswers(t *testing.T, e Engine) {
	s, c := open(t, e), ctx(t)
	lim := limits()
	ok, err := s.Answers.Put(c, answer("s", "k0", 10, at(0), "call_1", "call_2"), lim)
	must(t, err)
	if !ok {
		t.Fatal("not kept")
	}
	got, ok, err := s.Answers.Get(c, "s", "k0", at(time.Second))
	must(t, err)
	slices.Sort(got.Calls)
	if !ok || got.Status != 200 || string(got.Body) != strings.Repeat("b", 10) || string(got.Header) != `{"Content-Type":["application/json"]}` ||
		!slices.Equal(got.Calls, []string{"call_1", "call_2"}) || !got.Saved.Equal(at(0)) {
		t.Fatalf("got %v %+v", ok, got)
	}
	if _, ok, _ := s.Answers.Get(c, "other", "k0", at(time.Second)); ok {
		t.Fatal("another scope's answer was found")
	}
	// Kept for its TTL, not a moment longer.
	if _, ok, _ := s.Answers.Get(c, "s", "k0", at(time.Minute-time.Millisecond)); !ok {
		t.Fatal("gone before its TTL")
	}
	if _, ok, _ := s.Answers.Get(c, "s", "k0", at(time.Minute)); ok {
		t.Fatal("kept past its TTL")
	}
	// The same key again replaces it.
	_, err = s.Answers.Put(c, answer("s", "k0", 20, at(time.Second)), lim)
	must(t, err)
	got, _, _ = s.Answers.Get(c, "s", "k0", at(2*time.Second))
	if len(got.Body) != 20 || len(got.Calls) != 0 {
		t.Fatalf("replaced answer: %+v", got)
	}
	u, err := s.Answers.Usage(c, "s", at(2*time.Second))
	must(t, err)
	if u != (store.AnswerUsage{Scopes: 1, Entries: 1, Bytes: 20, ScopeEntries: 1, ScopeBytes: 20}) {
		t.Fatalf("usage %+v", u)
	}
	// Larger than an answer may be: not kept.
	ok, err = s.Answers.Put(c, answer("s", "big", lim.EntryBytes+1, at(0)), lim)
	must(t, err)
	if ok {
		t.Fatal("an answer over the entry bound was kept")
	}
	ok, _ = s.Answers.Put(c, answer("s", "edge", lim.EntryBytes, at(0)), lim)
	if !ok {
		t.Fatal("an answer at the entry bound was not kept")
	}
}

func testAnswerBounds(t *testing.T, e Engine) {
	s, c := open(t, e), ctx(t)
	lim := limits()
	// A scope keeps 3: the fourth evicts the oldest.
	for i := range 4 {
		_, err := s.Answers.Put(c, answer("s", fmt.Sprint("k", i), 100, at(time.Duration(i)*time.Second)), lim)
		must(t, err)
	}
	if got := kept(t, s, "s", at(5*time.Second)); !slices.Equal(got, []string{"k1", "k2", "k3"}) {
		t.Fatalf("kept %v", got)
	}
	// Under 500 bytes a scope, an answer of 400 evicts the two oldest.
	lim.Bytes = 500
	_, err := s.Answers.Put(c, answer("s", "k4", 400, at(6*time.Second)), lim)
	must(t, err)
	if got := kept(t, s, "s", at(7*time.Second)); !slices.Equal(got, []string{"k3", "k4"}) {
		t.Fatalf("kept %v", got)
	}
	// Expired answers go first and count for nothing.
	_, err = s.Answers.Put(c, answer("s", "k5", 100, at(2*time.Minute)), lim)
	must(t, err)
	if got := kept(t, s, "s", at(2*time.Minute)); !slices.Equal(got, []string{"k5"}) {
		t.Fatalf("kept %v", got)
	}
	u, _ := s.Answers.Usage(c, "s", at(2*time.Minute))
	if u.Entries != 1 || u.Bytes != 100 {
		t.Fatalf("usage after expiry %+v", u)
	}
}

func testAnswerTotals(t *testing.T, e Engine) {
	s, c := open(t, e), ctx(t)
	lim := limits() // 5 answers and 2000 bytes in all
	for i := range 6 {
		_, err := s.Answers.Put(c, answer(fmt.Sprint("scope", i), "k0", 100, at(time.Duration(i)*time.Second)), lim)
		must(t, err)
	}
	u, err := s.Answers.Usage(c, "scope0", at(10*time.Second))
	must(t, err)
	if u.Scopes != 5 || u.Entries != 5 || u.ScopeEntries != 0 {
		t.Fatalf("usage %+v: the oldest scope's answer should be gone", u)
	}
	lim.TotalBytes = 700
	_, err = s.Answers.Put(c, answer("scope9", "k0", 400, at(11*time.Second)), lim)
	must(t, err)
	u, _ = s.Answers.Usage(c, "scope9", at(12*time.Second))
	if u.Entries != 4 || u.Bytes != 700 || u.ScopeBytes != 400 {
		t.Fatalf("usage %+v", u)
	}
	// Saves from many connections at once keep the totals.
	lim = limits()
	errs := make(chan error, 20)
	for i := range 20 {
		go func() {
			_, err := s.Answers.Put(c, answer(fmt.Sprint("race", i), "k", 10, at(20*time.Second)), lim)
			errs <- err
		}()
	}
	for range 20 {
		must(t, <-errs)
	}
	if u, _ := s.Answers.Usage(c, "", at(21*time.Second)); u.Entries != 5 {
		t.Fatalf("%d answers kept under a total of 5", u.Entries)
	}
}

func testAnswerRetire(t *testing.T, e Engine) {
	s, c := open(t, e), ctx(t)
	lim := limits()
	for _, a := range []store.SavedAnswer{
		answer("s", "k0", 10, at(0), "call_a"),
		answer("s", "k1", 10, at(0), "call_b", "call_c"),
		answer("s", "k2", 10, at(0)),
		answer("t", "k0", 10, at(0), "call_b"),
	} {
		_, err := s.Answers.Put(c, a, lim)
		must(t, err)
	}
	must(t, s.Answers.Retire(c, "s", []string{"call_c", "call_z"}))
	if got := kept(t, s, "s", at(time.Second)); !slices.Equal(got, []string{"k0", "k2"}) {
		t.Fatalf("kept %v", got)
	}
	if got := kept(t, s, "t", at(time.Second)); !slices.Equal(got, []string{"k0"}) {
		t.Fatalf("another scope's answer was retired: %v", got)
	}
	must(t, s.Answers.Retire(c, "s", nil))
}
