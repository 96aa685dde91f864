// Package headroom chooses the account a conversation runs on from what is
// left of each account's plan windows: a new conversation goes where the
// fullest window that applies to its model is emptiest, and a running one
// stays where its prompt cache lives until that account is benched or one
// of its windows crosses the move threshold. Every choice carries the
// reason it was made. It does no I/O and keeps time only as told.
package headroom

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// DefaultMoveAt is how full a window may get before the conversations of
// its account move and it takes no new ones while another has room.
const DefaultMoveAt = 0.95

// Window is one plan window of an account as last reported.
type Window struct {
	Name     string    // five_hour, seven_day, seven_day_opus, …
	Used     float64   // 0..1 of the window used
	ResetsAt time.Time // zero: not reported
}

// Account is one account (a profile) as the choice sees it.
type Account struct {
	Name string
	// Windows are its plan figures; none: it reports none (an API key, a
	// token without usage figures) or none were seen yet.
	Windows []Window
	// Benched: it refused for its limit and must not be chosen until it
	// reopens.
	Benched bool
}

// Kind is what decided a choice.
type Kind uint8

// Kinds of reasons.
const (
	// Headroom: the account had the most room left; Window names its
	// fullest window.
	Headroom Kind = iota + 1
	// Priority: no account with figures had room, or none has figures:
	// the first by the operator's order.
	Priority
	// Sticky: the conversation stays on the account that served it.
	Sticky
	// Moved: the conversation left its account; Window names the window
	// that crossed the threshold, or none when the account was benched.
	Moved
)

// Reason explains a choice.
type Reason struct {
	Kind   Kind
	Window string
	Used   float64
}

// String is the reason as the X-Meridian-Route-Reason header and the logs
// give it: "headroom five_hour 31%", "priority", "sticky",
// "moved: seven_day 96%", "moved: benched".
func (r Reason) String() string {
	switch r.Kind {
	case Headroom:
		return fmt.Sprintf("headroom %s %d%%", r.Window, percent(r.Used))
	case Priority:
		return "priority"
	case Sticky:
		return "sticky"
	case Moved:
		if r.Window == "" {
			return "moved: benched"
		}
		return fmt.Sprintf("moved: %s %d%%", r.Window, percent(r.Used))
	}
	return ""
}

func percent(used float64) int { return int(math.Round(used * 100)) }

// Choice is the accounts a conversation tries, best first (the benched
// left out), and why the first was chosen.
type Choice struct {
	Order  []int // indexes into the accounts given
	Reason Reason
}

// Policy is how full a window may get before its account is left.
type Policy struct {
	MoveAt float64 // 0 means DefaultMoveAt
}

// Threshold is the share of a window past which an account takes no new
// conversations while another has room, and its running ones move.
func (p Policy) Threshold() float64 {
	if p.MoveAt <= 0 {
		return DefaultMoveAt
	}
	return p.MoveAt
}

// Place chooses the account of a new conversation for model: those with
// figures and room below the threshold by their fullest window, emptiest
// first (the window resetting sooner breaking a tie, then the order
// given); then those without figures in the order given; then those past
// the threshold, emptiest first; then the spent.
func (p Policy) Place(accounts []Account, model string, now time.Time) Choice {
	ranked := p.rank(accounts, -1, model, now)
	c := Choice{Order: make([]int, len(ranked))}
	for i, r := range ranked {
		c.Order[i] = r.index
	}
	if len(ranked) > 0 {
		c.Reason = ranked[0].reason()
	}
	return c
}

// Continue chooses the account for the next turn of a conversation that
// current served: it stays while current is not benched and no window of
// it that applies to model has reached the threshold, or while no other
// account ranks better; otherwise it moves to the best other.
func (p Policy) Continue(accounts []Account, current int, model string, now time.Time) Choice {
	here := p.standing(accounts, current, model, now)
	others := p.rank(accounts, current, model, now)
	leave := accounts[current].Benched || (here.tier != tierNoFigures && here.tightest.Used >= p.Threshold())
	if leave && len(others) > 0 && (accounts[current].Benched || others[0].before(here)) {
		c := Choice{Order: make([]int, 0, len(others)+1), Reason: Reason{Kind: Moved}}
		if !accounts[current].Benched {
			c.Reason.Window, c.Reason.Used = here.tightest.Name, here.tightest.Used
		}
		for _, r := range others {
			c.Order = append(c.Order, r.index)
		}
		if !accounts[current].Benched {
			c.Order = append(c.Order, current) // the last resort: it may still answer
		}
		return c
	}
	c := Choice{Order: make([]int, 0, len(others)+1), Reason: Reason{Kind: Sticky}}
	if !accounts[current].Benched {
		c.Order = append(c.Order, current)
	}
	for _, r := range others {
		c.Order = append(c.Order, r.index)
	}
	return c
}

// Tiers, best first.
const (
	tierRoom      = iota // figures, every window below the threshold
	tierNoFigures        // no figures
	tierFull             // a window at or past the threshold
	tierSpent            // a window used up
)

// standing is an account's place in the ranking.
type standing struct {
	index    int
	tier     int
	tightest Window // the fullest window that applies
}

func (s standing) reason() Reason {
	if s.tier == tierNoFigures {
		return Reason{Kind: Priority}
	}
	return Reason{Kind: Headroom, Window: s.tightest.Name, Used: s.tightest.Used}
}

// before says whether s ranks ahead of o: a better tier; in one tier with
// figures, less used (to the whole percent), then a reset sooner (its
// room comes back first, so spending it costs least); then the order
// given.
func (s standing) before(o standing) bool { return compare(s, o) < 0 }

func compare(a, b standing) int {
	if c := cmp.Compare(a.tier, b.tier); c != 0 || a.tier == tierNoFigures {
		return cmp.Or(c, cmp.Compare(a.index, b.index))
	}
	return cmp.Or(
		cmp.Compare(percent(a.tightest.Used), percent(b.tightest.Used)),
		compareReset(a.tightest.ResetsAt, b.tightest.ResetsAt),
		cmp.Compare(a.index, b.index))
}

// compareReset puts the sooner reset first and an unknown one last.
func compareReset(a, b time.Time) int {
	switch {
	case a.Equal(b):
		return 0
	case a.IsZero():
		return 1
	case b.IsZero():
		return -1
	}
	return a.Compare(b)
}

// rank orders every account but skip (-1: none) that is not benched.
func (p Policy) rank(accounts []Account, skip int, model string, now time.Time) []standing {
	out := make([]standing, 0, len(accounts))
	for i, a := range accounts {
		if i == skip || a.Benched {
			continue
		}
		out = append(out, p.standing(accounts, i, model, now))
	}
	slices.SortFunc(out, compare)
	return out
}

func (p Policy) standing(accounts []Account, i int, model string, now time.Time) standing {
	w, ok := Tightest(accounts[i].Windows, model, now)
	s := standing{index: i, tightest: w}
	switch {
	case !ok:
		s.tier = tierNoFigures
	case w.Used >= 1:
		s.tier = tierSpent
	case w.Used >= p.Threshold():
		s.tier = tierFull
	}
	return s
}

// Tightest is the fullest of the windows that apply to model, a window
// whose reset has passed counting as empty; ok is false without figures.
func Tightest(windows []Window, model string, now time.Time) (tightest Window, ok bool) {
	for _, w := range windows {
		if !Applies(w.Name, model) {
			continue
		}
		if !w.ResetsAt.IsZero() && !w.ResetsAt.After(now) {
			w.Used, w.ResetsAt = 0, time.Time{}
		}
		if !ok || w.Used > tightest.Used || (w.Used == tightest.Used && compareReset(w.ResetsAt, tightest.ResetsAt) > 0) {
			tightest, ok = w, true
		}
	}
	return tightest, ok
}

// Spent is the window that keeps an account from answering model without
// drawing paid extra usage: of the windows that apply and are used up,
// the one that resets last (until then the account has no room); ok is
// false when none is used up.
func Spent(windows []Window, model string, now time.Time) (spent Window, ok bool) {
	for _, w := range windows {
		if w.Used < 1 || !Applies(w.Name, model) || (!w.ResetsAt.IsZero() && !w.ResetsAt.After(now)) {
			continue
		}
		if !ok || compareReset(w.ResetsAt, spent.ResetsAt) > 0 {
			spent, ok = w, true
		}
	}
	return spent, ok
}

// Applies says whether a plan window limits requests for model: the
// model-scoped weekly windows (seven_day_opus, seven_day_sonnet, …) apply
// to their family's models only, every other window to all.
func Applies(window, model string) bool {
	family, scoped := strings.CutPrefix(window, "seven_day_")
	if !scoped {
		return true
	}
	switch family {
	case "opus", "sonnet", "haiku":
		return strings.Contains(strings.ToLower(model), family)
	}
	return true
}
