package keyrule

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

func hits(offsets ...time.Duration) []time.Time {
	var out []time.Time
	for _, o := range offsets {
		out = append(out, t0.Add(o))
	}
	return out
}

func TestRateIsRefusedAtTheLimitExactly(t *testing.T) {
	l := Limits{RPM: 3}
	// Two in the window: the third is admitted.
	if v := Decide(l, Use{Hits: hits(0, 10*time.Second)}, t0.Add(20*time.Second)); !v.OK {
		t.Fatalf("the third request of 3 rpm was refused: %+v", v)
	}
	// Three in the window: the fourth waits until the oldest leaves it.
	v := Decide(l, Use{Hits: hits(10*time.Second, 0, 20*time.Second)}, t0.Add(30*time.Second))
	if v.OK || v.Limit != "rpm" || v.Wait != 30*time.Second {
		t.Fatalf("the fourth request of 3 rpm: %+v, want refused for rpm, 30s wait", v)
	}
	// Hits older than the window do not count.
	if v := Decide(l, Use{Hits: hits(0, 10*time.Second, 20*time.Second)}, t0.Add(Window)); !v.OK {
		t.Fatalf("a hit a minute old still counted: %+v", v)
	}
}

func TestRateWaitIsForTheHitThatFreesASlot(t *testing.T) {
	// Five hits, limit 2: one more fits once four have left the window, so
	// the wait is for the fourth oldest (at 30 s).
	v := Decide(Limits{RPM: 2}, Use{Hits: hits(40*time.Second, 0, 10*time.Second, 30*time.Second, 20*time.Second)}, t0.Add(45*time.Second))
	if v.OK || v.Wait != 45*time.Second {
		t.Fatalf("got %+v, want a 45s wait (the hit at 30s leaves at 90s)", v)
	}
}

func TestConcurrencyAndTokens(t *testing.T) {
	l := Limits{Concurrent: 2, TokensPerDay: 1000}
	if v := Decide(l, Use{Running: 1, TokensToday: 999}, t0); !v.OK {
		t.Fatalf("below both limits: %+v", v)
	}
	if v := Decide(l, Use{Running: 2}, t0); v.OK || v.Limit != "concurrent" || v.Wait != ConcurrentWait {
		t.Fatalf("at the running limit: %+v", v)
	}
	v := Decide(l, Use{TokensToday: 1000}, t0)
	if v.OK || v.Limit != "tokens-per-day" || v.Wait != 14*time.Hour {
		t.Fatalf("over the budget at 10:00 UTC: %+v, want a wait until midnight (14h)", v)
	}
}

func TestNoLimitsAdmitEverything(t *testing.T) {
	if v := Decide(Limits{}, Use{Hits: hits(0, 0, 0), Running: 100, TokensToday: 1 << 40}, t0); !v.OK {
		t.Fatalf("a key without limits was refused: %+v", v)
	}
}

func TestStates(t *testing.T) {
	var never time.Time
	for _, c := range []struct {
		revoked, expires time.Time
		want             string
	}{
		{never, never, Active},
		{never, t0.Add(time.Second), Active},
		{never, t0, Expired},
		{t0.Add(-time.Hour), t0.Add(time.Hour), Revoked},
	} {
		if got := State(c.revoked, c.expires, t0); got != c.want {
			t.Errorf("State(%v, %v) = %s, want %s", c.revoked, c.expires, got, c.want)
		}
	}
}

func TestDays(t *testing.T) {
	late := time.Date(2026, 12, 2, 23, 59, 59, 0, time.FixedZone("x", -5*3600))
	if got, want := NextDay(late), time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Fatalf("NextDay(%v) = %v, want %v (days are UTC)", late, got, want)
	}
	if Day(t0) != Day(t0.Add(13*time.Hour)) || Day(t0) == Day(t0.Add(14*time.Hour)) {
		t.Fatal("a UTC day ends at midnight UTC")
	}
}

func TestScope(t *testing.T) {
	s := Scope{Profiles: []string{"work"}, Models: []string{"claude-sonnet-*", "haiku"}}
	for _, c := range []struct {
		profile, model string
		ok             bool
	}{
		{"work", "claude-sonnet-4-5", true},
		{"work", "haiku", true},
		{"work", "opus", false},
		{"home", "haiku", false},
	} {
		if got := s.AllowsProfile(c.profile) && s.AllowsModel(c.model); got != c.ok {
			t.Errorf("%s/%s: allowed %v, want %v", c.profile, c.model, got, c.ok)
		}
	}
	if !(Scope{}).AllowsProfile("any") || !(Scope{}).AllowsModel("any") {
		t.Error("an empty scope reaches everything")
	}
}

func TestNamesListsAndPatterns(t *testing.T) {
	if got := List(" a, b,,a ,c"); len(got) != 3 || got[0] != "a" || got[2] != "c" {
		t.Errorf("List = %q", got)
	}
	if err := CheckModels([]string{"claude-[", "x"}); err == nil {
		t.Error("a malformed pattern was accepted")
	}
	for _, bad := range []string{"", "has space", "slash/name", string(make([]byte, 65))} {
		if CheckName(bad) == nil {
			t.Errorf("name %q accepted", bad)
		}
	}
	if err := CheckName("laptop.codex-1"); err != nil {
		t.Error(err)
	}
	if d := Digest("mk-x"); len(d) != 64 || d == Digest("mk-y") {
		t.Errorf("Digest = %q", d)
	}
}

func TestBudgetPeriods(t *testing.T) {
	// 2026-12-02 is a Wednesday.
	for _, c := range []struct {
		per        string
		start, end time.Time
	}{
		{PerDay, time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC), time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)},
		{PerWeek, time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC), time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)},
		{PerMonth, time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)},
	} {
		if s, e := PeriodStart(c.per, t0), PeriodEnd(c.per, t0); !s.Equal(c.start) || !e.Equal(c.end) {
			t.Errorf("%s: [%v, %v), want [%v, %v)", c.per, s, e, c.start, c.end)
		}
	}
	// A Sunday's week began the Monday before; a Monday begins its own.
	sunday := time.Date(2026, 12, 6, 23, 0, 0, 0, time.UTC)
	if s := PeriodStart(PerWeek, sunday); !s.Equal(time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("Sunday's week began %v", s)
	}
	if s := PeriodStart(PerWeek, sunday.Add(time.Hour)); !s.Equal(time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("Monday's week began %v", s)
	}
	if err := CheckPer("year"); err == nil {
		t.Error("a year period was taken")
	}
}

func TestBudgetRefusesOnceSpentWithTheWaitToThePeriodsEnd(t *testing.T) {
	l := Limits{Budget: Micros(5), Per: PerMonth}
	if v := Decide(l, Use{Spent: Micros(4.999999)}, t0); !v.OK {
		t.Fatalf("under the budget: %+v", v)
	}
	v := Decide(l, Use{Spent: Micros(5.2)}, t0)
	if want := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC).Sub(t0); v.OK || v.Limit != "budget" || v.Wait != want {
		t.Fatalf("over the budget: %+v, want budget with a wait of %v", v, want)
	}
}

func TestBudgetAlertCrossesOnce(t *testing.T) {
	mark := Micros(4)
	for _, c := range []struct {
		spent, added int64
		want         bool
	}{
		{Micros(3.9), Micros(0.5), false}, // not there yet
		{Micros(4), Micros(0.1), true},    // exactly at the mark
		{Micros(4.4), Micros(0.5), true},  // across it
		{Micros(4.6), Micros(0.1), false}, // already past
		{Micros(4.6), 0, false},           // nothing added
		{Micros(9), Micros(9), true},      // one answer past it from nothing
	} {
		if got := Crossed(mark, c.spent, c.added); got != c.want {
			t.Errorf("Crossed(4$, spent %d, added %d) = %v", c.spent, c.added, got)
		}
	}
	if Crossed(0, Micros(1), Micros(1)) {
		t.Error("no mark crossed")
	}
}
