package failover

import (
	"slices"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/testkit"
)

func TestPure(t *testing.T) { testkit.CheckPure(t) }

func TestOrderSkipsTheBenchedUntilTheyReopen(t *testing.T) {
	var b Bench
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	all := []string{"a", "b", "c"}
	if got, _ := b.Order("b", all, t0); !slices.Equal(got, []string{"b", "a", "c"}) {
		t.Fatalf("order %v", got)
	}
	b.Put("a", t0, 30*time.Second)
	if got, _ := b.Order("a", all, t0.Add(time.Second)); !slices.Equal(got, []string{"b", "c"}) {
		t.Fatalf("a benched: %v", got)
	}
	b.Put("b", t0, 0) // no wait given: a minute
	b.Put("c", t0, 2*time.Minute)
	got, reopen := b.Order("a", all, t0.Add(time.Second))
	if len(got) != 0 || !reopen.Equal(t0.Add(30*time.Second)) {
		t.Fatalf("all benched: %v, reopen %v", got, reopen)
	}
	// A shorter bench does not cut a longer one short.
	b.Put("c", t0, time.Second)
	if u := b.Until("c", t0.Add(time.Minute)); !u.Equal(t0.Add(2 * time.Minute)) {
		t.Fatalf("c until %v", u)
	}
	// After its reset a profile is tried again, first if chosen.
	if got, _ := b.Order("a", all, t0.Add(31*time.Second)); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("after a's reset: %v", got)
	}
}
