package spareplan

import (
	"maps"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// burst starts n first turns of a contract at once and ends them.
func burst(d *Demand, key string, n int, at time.Time) {
	for range n {
		d.Arrive(key, at)
	}
	for range n {
		d.Leave(key)
	}
}

// Ten first turns at once ask for ten spares; the demand halves every
// half-life and is gone after the horizon.
func TestABurstIsRememberedThenForgotten(t *testing.T) {
	var d Demand
	burst(&d, "a", 10, t0)
	for _, c := range []struct {
		after time.Duration
		want  int
	}{{0, 10}, {time.Minute, 10}, {HalfLife, 5}, {2 * HalfLife, 3}, {3 * HalfLife, 1}, {Horizon, 0}} {
		if got := d.Want("a", t0.Add(c.after)); got != c.want {
			t.Errorf("%s after the burst: want %d spares, got %d", c.after, c.want, got)
		}
	}
	if w := d.Wants(t0.Add(Horizon)); len(w) != 0 || len(d.contracts) != 0 {
		t.Fatalf("after the horizon the demand is still kept: %v", w)
	}
}

// One-off prompts sent one after another, each alone in flight, never ask
// for more than one spare however many there are.
func TestOneAfterAnotherNeverGrows(t *testing.T) {
	var d Demand
	for i := range 40 {
		burst(&d, "a", 1, t0.Add(time.Duration(i)*200*time.Millisecond))
	}
	if got := d.Want("a", t0.Add(10*time.Second)); got != 1 {
		t.Fatalf("40 prompts one after another ask for %d spares", got)
	}
	if len(d.contracts["a"].peaks) != 1 {
		t.Fatalf("kept %d peaks for bursts of one", len(d.contracts["a"].peaks))
	}
}

// A smaller burst later does not hide a larger one before it; a larger
// one later replaces it.
func TestTheLargestRecentBurstDecides(t *testing.T) {
	var d Demand
	burst(&d, "a", 8, t0)
	burst(&d, "a", 3, t0.Add(time.Minute))
	if got := d.Want("a", t0.Add(2*time.Minute)); got != 7 {
		t.Fatalf("want 7 (8 a little decayed), got %d", got)
	}
	burst(&d, "a", 9, t0.Add(3*time.Minute))
	if got, n := d.Want("a", t0.Add(3*time.Minute)), len(d.contracts["a"].peaks); got != 9 || n != 1 {
		t.Fatalf("want 9 from one peak, got %d from %d", got, n)
	}
}

// Contracts are counted apart: a burst of one does not raise another's.
func TestContractsApart(t *testing.T) {
	var d Demand
	burst(&d, "a", 4, t0)
	burst(&d, "b", 1, t0)
	if w := d.Wants(t0); !maps.Equal(w, map[string]int{"a": 4, "b": 1}) {
		t.Fatalf("wants %v", w)
	}
}

func TestPlan(t *testing.T) {
	l := Limits{Min: 1, Max: 12}
	for _, c := range []struct {
		name  string
		wants map[string]int
		top   string
		l     Limits
		want  map[string]int
	}{
		{"nothing known", nil, "", l, map[string]int{}},
		{"the top contract gets its minimum", nil, "a", l, map[string]int{"a": 1}},
		{"a burst of the top contract", map[string]int{"a": 10}, "a", l, map[string]int{"a": 10}},
		{"a stray start of another contract gets none", map[string]int{"a": 1, "b": 1}, "a", l, map[string]int{"a": 1}},
		{"another contract's burst gets its own", map[string]int{"a": 1, "b": 3}, "a", l, map[string]int{"a": 1, "b": 3}},
		{"the total is bounded, largest first", map[string]int{"a": 10, "b": 5}, "a", l, map[string]int{"a": 10, "b": 2}},
		{"the bound beats the minimum", map[string]int{"b": 4}, "a", Limits{Min: 1, Max: 4}, map[string]int{"b": 4}},
		{"no minimum", map[string]int{"a": 1}, "a", Limits{Min: 0, Max: 4}, map[string]int{"a": 1}},
		{"no spares", map[string]int{"a": 5}, "a", Limits{Min: 0, Max: 0}, map[string]int{}},
	} {
		if got := Plan(c.wants, c.top, c.l); !maps.Equal(got, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}

func TestMayStart(t *testing.T) {
	idle := Machine{Cores: 2, Available: 4 << 30, Need: 1 << 30}
	if ok, why := MayStart(idle); !ok {
		t.Fatalf("an idle machine refused: %s", why)
	}
	one := idle
	one.Running = 1
	if ok, _ := MayStart(one); !ok {
		t.Fatal("one turn on two cores refused a spare")
	}
	calm := one
	calm.LastBusy, calm.Now = time.Unix(100, 0), time.Unix(100, 0).Add(calmAfterBusy)
	if ok, why := MayStart(calm); !ok {
		t.Fatalf("refused a second after the cores were busy: %s", why)
	}
	for name, m := range map[string]Machine{
		"a request waits":       {Waiting: 1, Cores: 2, Available: 4 << 30, Need: 1 << 30},
		"every core has a turn": {Running: 2, Cores: 2, Available: 4 << 30, Need: 1 << 30},
		"memory is short":       {Cores: 2, Available: 512 << 20, Need: 1 << 30},
		"every core had a turn a moment ago": {Running: 1, Cores: 2, Available: 4 << 30, Need: 1 << 30,
			LastBusy: time.Unix(100, 0), Now: time.Unix(100, 0).Add(calmAfterBusy - time.Millisecond)},
	} {
		if ok, why := MayStart(m); ok || why == "" {
			t.Errorf("%s: a spare may start (%q)", name, why)
		}
	}
}

// Under a budget of 1 % of a core a start that cost 0.6 s lets the next
// one go a minute after it; without a budget, at once.
func TestNextStart(t *testing.T) {
	last := time.Unix(1_800_000_000, 0)
	if got := NextStart(last, 600*time.Millisecond, 0.01); !got.Equal(last.Add(time.Minute)) {
		t.Fatalf("1 %%: %v after the last start", got.Sub(last))
	}
	if got := NextStart(last, 600*time.Millisecond, 0); !got.Equal(last) {
		t.Fatalf("no budget: %v after the last start", got.Sub(last))
	}
	if got := NextStart(time.Time{}, time.Second, 0.01); !got.IsZero() {
		t.Fatalf("no start yet: %v", got)
	}
}
