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
			now.Add(-time.Minute), store.KeyDays{Today: 7, BudgetFrom: 5}, func(u store.KeyUse) bool { seen = u; return yes(u) })
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
	// Tokens count per day, summed; spend over the budget's days.
	for _, u := range []struct {
		day, tokens, micros, spent int64
	}{{7, 100, 10, 10}, {7, 23, 5, 15}, {6, 1000, 200, 215}, {4, 50, 9000, 215}} {
		spent, err := s.Keys.AddUse(c, "k", store.KeyDays{Today: u.day, BudgetFrom: 5}, u.tokens, u.micros)
		must(t, err)
		if spent != u.spent {
			t.Fatalf("after adding %d µ$ on day %d the budget's spend is %d, want %d", u.micros, u.day, spent, u.spent)
		}
	}
	admit("probe", at(63*time.Second), func(store.KeyUse) bool { return false })
	if seen.TokensToday != 123 || seen.Spent != 215 {
		t.Fatalf("tokens on day 7 = %d, spend from day 5 = %d; want 123 and 215", seen.TokensToday, seen.Spent)
	}
}

// testKeyUpdate changes a key's scope, limits, default model and budget;
// its digest and times stay.
func testKeyUpdate(t *testing.T, e Engine) {
	s, c := open(t, e), ctx(t)
	must(t, s.Keys.Add(c, store.Key{Name: "k", Digest: "d", RPM: 5, Created: at(0)}))
	must(t, s.Keys.Revoke(c, "k", at(time.Hour)))
	up := store.Key{Name: "k", Digest: "other", Models: []string{"claude-*"}, TokensPerDay: 9, DefaultModel: "claude-sonnet-5",
		Budget: 25_000_000, BudgetAlert: 20_000_000, Per: "month", Created: at(time.Minute)}
	must(t, s.Keys.Update(c, up))
	got, err := s.Keys.Get(c, "k")
	must(t, err)
	if got.Digest != "d" || !got.Created.Equal(at(0)) || !got.Revoked.Equal(at(time.Hour)) || got.RPM != 0 || got.TokensPerDay != 9 ||
		!slices.Equal(got.Models, up.Models) || got.DefaultModel != up.DefaultModel || got.Budget != up.Budget ||
		got.BudgetAlert != up.BudgetAlert || got.Per != "month" {
		t.Fatalf("after an update: %+v", got)
	}
	if err := s.Keys.Update(c, store.Key{Name: "nobody"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("update of an unknown key: %v, want ErrNotFound", err)
	}
}

func testAliases(t *testing.T, e Engine) {
	s, c := open(t, e), ctx(t)
	must(t, s.Aliases.Put(c, store.ModelAlias{Name: "gpt-4o", Model: "claude-sonnet-5", Created: at(0)}))
	must(t, s.Aliases.Put(c, store.ModelAlias{Name: "fast", Model: "claude-haiku-5", Effort: "low", Created: at(0)}))
	must(t, s.Aliases.Put(c, store.ModelAlias{Name: "gpt-4o", Model: "claude-opus-5", Effort: "high", Created: at(time.Minute)}))
	list, err := s.Aliases.List(c)
	must(t, err)
	if len(list) != 2 || list[0].Name != "fast" || list[0].Model != "claude-haiku-5" || list[0].Effort != "low" ||
		list[1].Name != "gpt-4o" || list[1].Model != "claude-opus-5" || list[1].Effort != "high" || !list[1].Created.Equal(at(time.Minute)) {
		t.Fatalf("aliases = %+v, want fast → claude-haiku-5 low, gpt-4o → claude-opus-5 high (replaced)", list)
	}
	must(t, s.Aliases.Remove(c, "fast"))
	if err := s.Aliases.Remove(c, "fast"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("removing twice: %v, want ErrNotFound", err)
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
				at(-time.Minute), store.KeyDays{}, func(u store.KeyUse) bool { return u.Running < limit })
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
