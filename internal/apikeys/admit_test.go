package apikeys

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/keyrule"
	"github.com/meridian-gw/meridian/internal/store"
)

// The ring finds a key by its secret, by name and by a rule; a key added
// after the last read is seen once the ring's second has passed, and the
// keys last read stand while the store cannot be read.
func TestTheRingFollowsTheStore(t *testing.T) {
	ks, ctx := keys(t), context.Background()
	pi, err := Add(ctx, ks, Spec{Name: "pi"}, now)
	if err != nil {
		t.Fatal(err)
	}
	ring := NewRing(ks)
	if k, found, any, err := ring.Lookup(ctx, pi.Key, now); err != nil || !found || !any || k.Name != "pi" {
		t.Fatalf("lookup: %v %v %v %v", k.Name, found, any, err)
	}
	if _, found, _, _ := ring.Lookup(ctx, "mk-not-a-key", now); found {
		t.Fatal("an unknown secret was found")
	}
	codex, err := Add(ctx, ks, Spec{Name: "codex"}, now)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := ring.Active(ctx, codex.Key, now.Add(500*time.Millisecond)); ok {
		t.Fatal("the ring read the store again within its second")
	}
	if k, ok := ring.Active(ctx, codex.Key, now.Add(ringTTL)); !ok || k.Name != "codex" {
		t.Fatalf("a key added a second before is not in force: %v", k)
	}
	if _, err := Revoke(ctx, ks, "codex", now); err != nil {
		t.Fatal(err)
	}
	if _, ok := ring.Active(ctx, codex.Key, now.Add(2*ringTTL)); ok {
		t.Fatal("a revoked key is in force")
	}
	if k, ok, err := ring.Named(ctx, "pi", now.Add(2*ringTTL)); err != nil || !ok || k.Name != "pi" {
		t.Fatalf("named: %v %v %v", k.Name, ok, err)
	}
	ring.keys = failingKeys{ks}
	if k, ok := ring.Active(ctx, pi.Key, now.Add(time.Hour)); !ok || k.Name != "pi" {
		t.Fatal("the keys last read did not stand while the store failed")
	}
	if _, _, _, err := NewRing(failingKeys{ks}).Lookup(ctx, pi.Key, now); err == nil {
		t.Fatal("a ring that never read the store found no error")
	}
}

// Admission counts a key's requests on the store every host shares: the
// limit at once is held until a request is released, the rate's refusal
// says how long to wait, a forwarded request's tokens count, and a dry
// look at the standing records nothing.
func TestAdmissionCountsAgainstTheLimits(t *testing.T) {
	ks, ctx := keys(t), context.Background()
	if _, err := Add(ctx, ks, Spec{Name: "pi", RPM: 3, Concurrent: 1}, now); err != nil {
		t.Fatal(err)
	}
	k, err := ks.Get(ctx, "pi")
	if err != nil {
		t.Fatal(err)
	}
	a := NewAdmission(ks, "host-a", slog.New(slog.DiscardHandler), nil)
	a.now = func() time.Time { return now }
	release, v, err := a.Admit(ctx, k, now)
	if err != nil || release == nil || !v.OK {
		t.Fatalf("first: %v %v", v, err)
	}
	if again, v, err := a.Admit(ctx, k, now.Add(time.Second)); err != nil || again != nil || v.Limit != "concurrent" {
		t.Fatalf("a second at once: %+v %v", v, err)
	}
	release()
	release, _, err = a.Admit(ctx, k, now.Add(2*time.Second))
	if err != nil || release == nil {
		t.Fatalf("after the release: %v", err)
	}
	release()
	if _, _, err = a.Admit(ctx, k, now.Add(3*time.Second)); err != nil {
		t.Fatal(err)
	}
	if again, v, _ := a.Admit(ctx, k, now.Add(4*time.Second)); again != nil || v.Limit == "" || v.Wait <= 0 {
		t.Fatalf("over the rate: %+v", v)
	}
	var total int64 = 10
	add := a.Counting(ctx, k, func() Use { return Use{Tokens: total} })
	total = 250
	add()
	s, err := a.Standing(ctx, k, now.Add(5*time.Second))
	if err != nil || s.RequestsLastMinute != 3 || s.Running != 1 || s.TokensToday != 240 {
		t.Fatalf("standing %+v %v", s, err)
	}
	if s2, _ := a.Standing(ctx, k, now.Add(5*time.Second)); s2 != s {
		t.Fatalf("a look at the standing changed it: %+v then %+v", s, s2)
	}
}

// failingKeys is a store whose key list cannot be read.
type failingKeys struct{ store.Keys }

func (failingKeys) List(context.Context) ([]store.Key, error) {
	return nil, errors.New("the store is out of reach")
}

// A dollar budget: the answer that crosses it finishes and counts, the
// next request is refused until the period ends, and each mark (the
// alert's, the budget's) is told once, by the answer that crossed it.
func TestBudgetRefusesAfterTheCrossingAnswer(t *testing.T) {
	ks, ctx := keys(t), context.Background()
	if _, err := Add(ctx, ks, Spec{Name: "ci", Budget: 1, Per: keyrule.PerWeek}, now); err != nil {
		t.Fatal(err)
	}
	k, _ := ks.Get(ctx, "ci")
	if k.BudgetAlert != keyrule.Micros(0.8) {
		t.Fatalf("the alert mark defaults to %d µ$, want 80%% of the budget", k.BudgetAlert)
	}
	var told []BudgetCrossing
	a := NewAdmission(ks, "h", slog.New(slog.DiscardHandler), func(c BudgetCrossing) { told = append(told, c) })
	a.now = func() time.Time { return now }
	answer := func(usd float64) (refused keyrule.Verdict) {
		t.Helper()
		release, v, err := a.Admit(ctx, k, now)
		if err != nil {
			t.Fatal(err)
		}
		if release == nil {
			return v
		}
		var spent int64
		count := a.Counting(ctx, k, func() Use { return Use{Micros: spent} })
		spent = keyrule.Micros(usd)
		count()
		release()
		return v
	}
	for _, usd := range []float64{0.5, 0.35, 0.1} { // 0.85 crosses the mark
		if v := answer(usd); !v.OK {
			t.Fatalf("refused at $%v: %+v", usd, v)
		}
	}
	if v := answer(0.2); !v.OK { // 0.95 + 0.2 crosses the budget: it finishes
		t.Fatalf("the crossing answer was refused: %+v", v)
	}
	v := answer(0.01)
	if want := keyrule.PeriodEnd(keyrule.PerWeek, now).Sub(now); v.OK || v.Limit != "budget" || v.Wait != want {
		t.Fatalf("after the budget: %+v, want refused for budget, waiting %v", v, want)
	}
	if len(told) != 2 || told[0].Hard || told[0].Spent != 0.85 || !told[1].Hard || told[1].Spent != 1.15 {
		t.Fatalf("crossings told: %+v, want the mark at $0.85 then the budget at $1.15", told)
	}
	st, err := a.Standing(ctx, k, now)
	if err != nil || st.Spent != keyrule.Micros(1.15) || !st.Resets.Equal(keyrule.PeriodEnd(keyrule.PerWeek, now)) {
		t.Fatalf("standing %+v %v", st, err)
	}
}
