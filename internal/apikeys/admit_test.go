package apikeys

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

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
	a := NewAdmission(ks, "host-a", slog.New(slog.DiscardHandler))
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
	add := a.Tokens(ctx, "pi", func() int64 { return total })
	total = 250
	add()
	s, err := a.Standing(ctx, "pi", now.Add(5*time.Second))
	if err != nil || s.RequestsLastMinute != 3 || s.Running != 1 || s.TokensToday != 240 {
		t.Fatalf("standing %+v %v", s, err)
	}
	if s2, _ := a.Standing(ctx, "pi", now.Add(5*time.Second)); s2 != s {
		t.Fatalf("a look at the standing changed it: %+v then %+v", s, s2)
	}
}

// failingKeys is a store whose key list cannot be read.
type failingKeys struct{ store.Keys }

func (failingKeys) List(context.Context) ([]store.Key, error) {
	return nil, errors.New("the store is out of reach")
}
