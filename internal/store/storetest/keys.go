package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/store"
)

func testKeys(t *testing.T, e Engine) {
	s, c := open(t, e), ctx(t)
	k := store.Key{Name: "laptop-codex", Digest: "d1", Profiles: []string{"work"}, Models: []string{"claude-sonnet-*", "haiku"},
		RPM: 30, Concurrent: 2, TokensPerDay: 1 << 40, Expires: at(time.Hour), Created: at(0)}
	must(t, s.Keys.Add(c, k))
	if err := s.Keys.Add(c, store.Key{Name: "laptop-codex", Digest: "d2", Created: at(0)}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("a second key of one name: %v, want ErrConflict", err)
	}
	if err := s.Keys.Add(c, store.Key{Name: "other", Digest: "d1", Created: at(0)}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("a second key of one digest: %v, want ErrConflict", err)
	}
	must(t, s.Keys.Add(c, store.Key{Name: "ci", Digest: "d3", Created: at(time.Second)}))
	got, err := s.Keys.ByDigest(c, "d1")
	must(t, err)
	if got.Name != k.Name || !slices.Equal(got.Profiles, k.Profiles) || !slices.Equal(got.Models, k.Models) ||
		got.RPM != 30 || got.Concurrent != 2 || got.TokensPerDay != 1<<40 || !got.Expires.Equal(k.Expires) ||
		!got.Created.Equal(k.Created) || !got.Revoked.IsZero() {
		t.Fatalf("read back %+v, stored %+v", got, k)
	}
	if got, _ := s.Keys.Get(c, "ci"); got.Profiles != nil || !got.Expires.IsZero() {
		t.Fatalf("a key without scope or expiry reads back as %+v", got)
	}
	list, err := s.Keys.List(c)
	must(t, err)
	if len(list) != 2 || list[0].Name != "ci" || list[1].Name != "laptop-codex" {
		t.Fatalf("list = %+v", list)
	}
	// Rotating replaces the digest: the old one finds nothing.
	must(t, s.Keys.Rotate(c, "ci", "d4", at(time.Minute)))
	if _, err := s.Keys.ByDigest(c, "d3"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the rotated-out digest: %v, want ErrNotFound", err)
	}
	if got, _ := s.Keys.ByDigest(c, "d4"); got.Name != "ci" || !got.Rotated.Equal(at(time.Minute)) {
		t.Fatalf("after rotating: %+v", got)
	}
	// Revoking twice keeps the first time.
	must(t, s.Keys.Revoke(c, "ci", at(2*time.Minute)))
	must(t, s.Keys.Revoke(c, "ci", at(3*time.Minute)))
	if got, _ := s.Keys.Get(c, "ci"); !got.Revoked.Equal(at(2 * time.Minute)) {
		t.Fatalf("revoked at %v, want the first revocation", got.Revoked)
	}
	for name, err := range map[string]error{
		"revoke": s.Keys.Revoke(c, "nobody", at(0)),
		"rotate": s.Keys.Rotate(c, "nobody", "d9", at(0)),
	} {
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s of an unknown key: %v, want ErrNotFound", name, err)
		}
	}
	if _, err := s.Keys.Get(c, "nobody"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("get of an unknown key: %v", err)
	}
}

func testKeyAdmit(t *testing.T, e Engine) {
	s, c := open(t, e), ctx(t)
	must(t, s.Keys.Add(c, store.Key{Name: "k", Digest: "d", Created: at(0)}))
	var seen store.KeyUse
	admit := func(id string, now time.Time, yes func(store.KeyUse) bool) bool {
		t.Helper()
		ok, err := s.Keys.Admit(c, "k", store.KeyRun{ID: id, Host: "h", At: now, Until: now.Add(time.Minute)},
			now.Add(-time.Minute), 7, func(u store.KeyUse) bool { seen = u; return yes(u) })
		must(t, err)
		return ok
	}
	always := func(store.KeyUse) bool { return true }
	for i := range 3 {
		if !admit(fmt.Sprint("r", i), at(time.Duration(i)*time.Second), always) {
			t.Fatal("admit said yes, the store said no")
		}
	}
	// A refused admission records nothing.
	if admit("no", at(4*time.Second), func(store.KeyUse) bool { return false }) {
		t.Fatal("admit said no, the store said yes")
	}
	admit("probe", at(5*time.Second), func(store.KeyUse) bool { return false })
	if len(seen.Hits) != 3 || seen.Running != 3 || !slices.ContainsFunc(seen.Hits, func(h time.Time) bool { return h.Equal(at(0)) }) {
		t.Fatalf("use after three admissions and a refusal: %+v", seen)
	}
	// Released requests stop running; hits stay for the window.
	must(t, s.Keys.Release(c, "k", "r0"))
	must(t, s.Keys.Renew(c, "k", "r1", at(10*time.Minute)))
	admit("probe", at(61*time.Second), func(store.KeyUse) bool { return false })
	// At 61 s: the hit at 0 left the window; r2's lease (until 62 s)
	// still holds, r1 was renewed.
	if len(seen.Hits) != 2 || seen.Running != 2 {
		t.Fatalf("at 61s: %+v, want 2 hits (1s, 2s) and 2 running (r1, r2)", seen)
	}
	// A lease that lapses (its host died holding it) stops counting.
	admit("probe", at(62*time.Second), func(store.KeyUse) bool { return false })
	if seen.Running != 1 {
		t.Fatalf("at 62s r2's lease lapsed, yet %d run", seen.Running)
	}
	// Tokens count per day, summed.
	must(t, s.Keys.AddTokens(c, "k", 7, 100))
	must(t, s.Keys.AddTokens(c, "k", 7, 23))
	must(t, s.Keys.AddTokens(c, "k", 6, 1000))
	admit("probe", at(63*time.Second), func(store.KeyUse) bool { return false })
	if seen.TokensToday != 123 {
		t.Fatalf("tokens on day 7 = %d, want 123", seen.TokensToday)
	}
}

// testKeyAdmitShared runs admissions of one key from two stores on one
// database at once, under a limit of three running: the count the stores
// agree on never lets a fourth run.
func testKeyAdmitShared(t *testing.T, e Engine) {
	s, another := e.New(t, 0, 0)
	s2 := another()
	c := ctx(t)
	must(t, s.Keys.Add(c, store.Key{Name: "shared", Digest: "d", Created: at(0)}))
	const limit = 3
	var running, most, admitted atomic.Int32
	var wg sync.WaitGroup
	for i := range 20 {
		st := []*store.Store{s, s2}[i%2]
		wg.Go(func() {
			id := fmt.Sprint("run-", i)
			ok, err := st.Keys.Admit(c, "shared", store.KeyRun{ID: id, Host: "h", At: at(0), Until: at(time.Hour)},
				at(-time.Minute), 0, func(u store.KeyUse) bool { return u.Running < limit })
			if err != nil {
				t.Error(err)
				return
			}
			if !ok {
				return
			}
			admitted.Add(1)
			n := running.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			time.Sleep(5 * time.Millisecond)
			running.Add(-1)
			if err := st.Keys.Release(c, "shared", id); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if most.Load() > limit || admitted.Load() < limit {
		t.Fatalf("%d admitted, at most %d at once; the limit is %d", admitted.Load(), most.Load(), limit)
	}
}
