package headroom

import (
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// This package is a pure core: no I/O, and only the packages it is
// allowed.
func TestImportsArePure(t *testing.T) { testkit.CheckPure(t) }

var t0 = time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)

func fiveHour(used float64, resetIn time.Duration) []Window {
	return []Window{{Name: "five_hour", Used: used, ResetsAt: t0.Add(resetIn)}, {Name: "seven_day", Used: 0.1, ResetsAt: t0.Add(100 * time.Hour)}}
}

func names(accounts []Account, c Choice) []string {
	out := make([]string, len(c.Order))
	for i, j := range c.Order {
		out[i] = accounts[j].Name
	}
	return out
}

func TestPlaceTakesTheMostHeadroom(t *testing.T) {
	accounts := []Account{
		{Name: "full", Windows: fiveHour(0.96, time.Hour)},
		{Name: "api"}, // no figures
		{Name: "half", Windows: fiveHour(0.7, time.Hour)},
		{Name: "fresh", Windows: fiveHour(0.2, time.Hour)},
		{Name: "out", Windows: fiveHour(0.05, time.Hour), Benched: true},
		{Name: "spent", Windows: fiveHour(1, time.Hour)},
	}
	c := Policy{}.Place(accounts, "claude-sonnet-4", t0)
	if got := names(accounts, c); !slices.Equal(got, []string{"fresh", "half", "api", "full", "spent"}) {
		t.Fatalf("order %v", got)
	}
	if got := c.Reason.String(); got != "headroom five_hour 20%" {
		t.Fatalf("reason %q", got)
	}
}

func TestATieGoesToTheWindowResettingSooner(t *testing.T) {
	accounts := []Account{
		{Name: "late", Windows: fiveHour(0.402, 4*time.Hour)},
		{Name: "soon", Windows: fiveHour(0.398, time.Hour)},
		{Name: "later", Windows: fiveHour(0.4, 3*time.Hour)},
	}
	if got := names(accounts, Policy{}.Place(accounts, "m", t0)); !slices.Equal(got, []string{"soon", "later", "late"}) {
		t.Fatalf("order %v", got)
	}
}

func TestWithoutFiguresTheOperatorsOrderHolds(t *testing.T) {
	accounts := []Account{{Name: "a"}, {Name: "b"}, {Name: "c"}}
	c := Policy{}.Place(accounts, "m", t0)
	if got := names(accounts, c); !slices.Equal(got, []string{"a", "b", "c"}) || c.Reason.String() != "priority" {
		t.Fatalf("order %v, reason %q", got, c.Reason)
	}
}

func TestAWindowPastItsResetIsEmpty(t *testing.T) {
	accounts := []Account{
		{Name: "busy", Windows: fiveHour(0.5, time.Hour)},
		{Name: "reset", Windows: []Window{{Name: "five_hour", Used: 0.99, ResetsAt: t0.Add(-time.Minute)}}},
	}
	c := Policy{}.Place(accounts, "m", t0)
	if got := names(accounts, c); got[0] != "reset" || c.Reason.String() != "headroom five_hour 0%" {
		t.Fatalf("order %v, reason %q", got, c.Reason)
	}
}

func TestAModelsOwnWindowAppliesToItAlone(t *testing.T) {
	opusFull := append(fiveHour(0.3, time.Hour), Window{Name: "seven_day_opus", Used: 0.9, ResetsAt: t0.Add(50 * time.Hour)})
	accounts := []Account{{Name: "a", Windows: opusFull}, {Name: "b", Windows: fiveHour(0.5, time.Hour)}}
	if c := (Policy{}).Place(accounts, "claude-opus-4-5", t0); accounts[c.Order[0]].Name != "b" || c.Reason.String() != "headroom five_hour 50%" {
		t.Fatalf("opus: %v %q", names(accounts, c), c.Reason)
	}
	if c := (Policy{}).Place(accounts, "claude-sonnet-4-5", t0); accounts[c.Order[0]].Name != "a" || c.Reason.String() != "headroom five_hour 30%" {
		t.Fatalf("sonnet: %v %q", names(accounts, c), c.Reason)
	}
}

func TestAConversationStaysWhileItsAccountHasRoom(t *testing.T) {
	accounts := []Account{{Name: "a", Windows: fiveHour(0.1, time.Hour)}, {Name: "b", Windows: fiveHour(0.6, time.Hour)}}
	c := Policy{}.Continue(accounts, 1, "m", t0)
	if got := names(accounts, c); !slices.Equal(got, []string{"b", "a"}) || c.Reason.String() != "sticky" {
		t.Fatalf("order %v, reason %q", got, c.Reason)
	}
}

func TestAConversationMovesPastTheThreshold(t *testing.T) {
	accounts := []Account{
		{Name: "a", Windows: fiveHour(0.4, time.Hour)},
		{Name: "b", Windows: []Window{{Name: "five_hour", Used: 0.2, ResetsAt: t0.Add(time.Hour)}, {Name: "seven_day", Used: 0.96, ResetsAt: t0.Add(9 * time.Hour)}}},
		{Name: "c", Windows: fiveHour(0.3, time.Hour)},
	}
	c := Policy{}.Continue(accounts, 1, "m", t0)
	if got := names(accounts, c); !slices.Equal(got, []string{"c", "a", "b"}) || c.Reason.String() != "moved: seven_day 96%" {
		t.Fatalf("order %v, reason %q", got, c.Reason)
	}
	// Past the threshold with nowhere better to go, it stays.
	accounts[0].Windows, accounts[2].Windows = fiveHour(0.97, time.Hour), fiveHour(1, time.Hour)
	c = Policy{}.Continue(accounts, 1, "m", t0)
	if got := names(accounts, c); got[0] != "b" || c.Reason.String() != "sticky" {
		t.Fatalf("order %v, reason %q", got, c.Reason)
	}
	// A lower threshold moves it sooner.
	accounts[0].Windows = fiveHour(0.1, time.Hour)
	accounts[1].Windows = fiveHour(0.85, time.Hour)
	if c := (Policy{MoveAt: 0.8}).Continue(accounts, 1, "m", t0); c.Reason.String() != "moved: five_hour 85%" {
		t.Fatalf("reason %q", c.Reason)
	}
}

func TestABenchedAccountsConversationMoves(t *testing.T) {
	accounts := []Account{{Name: "a", Benched: true}, {Name: "b"}}
	c := Policy{}.Continue(accounts, 0, "m", t0)
	if got := names(accounts, c); !slices.Equal(got, []string{"b"}) || c.Reason.String() != "moved: benched" {
		t.Fatalf("order %v, reason %q", got, c.Reason)
	}
	accounts[1].Benched = true
	if c := (Policy{}).Continue(accounts, 0, "m", t0); len(c.Order) != 0 {
		t.Fatalf("every account benched: %v", c.Order)
	}
}

// Whatever the figures: the order holds each account not benched once,
// nothing before the first ranks better than it, and a conversation
// that stays is on its own account.
func TestChoicesAreConsistent(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 8).Draw(t, "n")
		accounts := make([]Account, n)
		for i := range accounts {
			accounts[i].Name = string(rune('a' + i))
			accounts[i].Benched = rapid.IntRange(0, 4).Draw(t, "benched") == 0
			for _, name := range []string{"five_hour", "seven_day", "seven_day_opus"} {
				if rapid.Bool().Draw(t, "has") {
					accounts[i].Windows = append(accounts[i].Windows, Window{Name: name,
						Used:     float64(rapid.IntRange(0, 110).Draw(t, "used")) / 100,
						ResetsAt: t0.Add(time.Duration(rapid.IntRange(-5, 300).Draw(t, "reset")) * time.Minute)})
				}
			}
		}
		model := rapid.SampledFrom([]string{"claude-opus-4", "claude-sonnet-4"}).Draw(t, "model")
		p := Policy{}
		open := 0
		for _, a := range accounts {
			if !a.Benched {
				open++
			}
		}
		check := func(c Choice) {
			seen := map[int]bool{}
			for _, i := range c.Order {
				if seen[i] || accounts[i].Benched {
					t.Fatalf("order %v repeats or holds a benched account", c.Order)
				}
				seen[i] = true
			}
			if len(c.Order) != open {
				t.Fatalf("order %v: want the %d accounts not benched", c.Order, open)
			}
		}
		placed := p.Place(accounts, model, t0)
		check(placed)
		if len(placed.Order) > 0 {
			first := p.standing(accounts, placed.Order[0], model, t0)
			for _, i := range placed.Order[1:] {
				if p.standing(accounts, i, model, t0).before(first) {
					t.Fatalf("%s ranks before the chosen %s", accounts[i].Name, accounts[placed.Order[0]].Name)
				}
			}
		}
		cur := rapid.IntRange(0, n-1).Draw(t, "current")
		c := p.Continue(accounts, cur, model, t0)
		check(c)
		if c.Reason.Kind == Sticky && len(c.Order) > 0 && c.Order[0] != cur {
			t.Fatalf("sticky but first is %d, not %d", c.Order[0], cur)
		}
		if c.Reason.Kind == Moved && len(c.Order) > 0 && c.Order[0] == cur {
			t.Fatal("moved but stayed")
		}
	})
}

func TestReasonsRead(t *testing.T) {
	for r, want := range map[Reason]string{
		{Kind: Headroom, Window: "five_hour", Used: 0.314}: "headroom five_hour 31%",
		{Kind: Priority}: "priority",
		{Kind: Sticky}:   "sticky",
		{Kind: Moved, Window: "seven_day", Used: 0.955}: "moved: seven_day 96%",
		{Kind: Moved}: "moved: benched",
	} {
		if got := r.String(); got != want {
			t.Errorf("%+v: %q, want %q", r, got, want)
		}
	}
}

func TestSpentIsTheWindowThatResetsLast(t *testing.T) {
	windows := []Window{
		{Name: "five_hour", Used: 1, ResetsAt: t0.Add(time.Hour)},
		{Name: "seven_day", Used: 1, ResetsAt: t0.Add(40 * time.Hour)},
		{Name: "seven_day_opus", Used: 1, ResetsAt: t0.Add(90 * time.Hour)},
		{Name: "seven_day_overage_included", Used: 0.5, ResetsAt: t0.Add(90 * time.Hour)},
	}
	if w, ok := Spent(windows, "claude-sonnet-4", t0); !ok || w.Name != "seven_day" {
		t.Fatalf("spent %+v %v", w, ok)
	}
	if w, ok := Spent(windows[:1], "m", t0.Add(2*time.Hour)); ok {
		t.Fatalf("a window past its reset is not spent: %+v", w)
	}
	if _, ok := Spent(windows[3:], "m", t0); ok {
		t.Fatal("half used is not spent")
	}
}
