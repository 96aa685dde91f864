package web

import (
	"io"
	"strings"
	"time"
)

// Chrome is what the frame of every page shows: the version and, on the
// operator's pages, a bar of each profile's plan windows.
type Chrome struct {
	Version string
	Plans   []PlanBar
}

// PlanBar is one profile in the header's bar of plan windows.
type PlanBar struct {
	Profile string
	Default bool
	// State is open, benched (refused for its rate limit) or spent (a
	// plan-only profile with a window used up); Until is when it reopens.
	State string
	Until time.Time
	// Windows are its plan windows, the fullest first.
	Windows []PlanWindow
}

// Fullest is the bar's headline: the most used of its windows.
func (b PlanBar) Fullest() (PlanWindow, bool) {
	if len(b.Windows) == 0 {
		return PlanWindow{}, false
	}
	return b.Windows[0], true
}

// ProfilesPage is the profile page: each profile as requests are placed
// on it, and the operator's actions on it.
type ProfilesPage struct {
	// Accounts is how a request that names no profile is placed
	// (headroom or priority); MoveAt the share at which a running
	// conversation moves on.
	Accounts string
	MoveAt   float64
	Profiles []ProfileCard
	// CSRF is the console forms' token; empty: no console, no actions.
	CSRF        string
	Done, Error string
}

// ProfileCard is one profile on the profile page.
type ProfileCard struct {
	PlanBar
	Backend, Status, Login string
	// APIKey: it answers with an API key, which has no plan.
	Fallback, PlanOnly, APIKey bool
	// ObservedAt is when its figures were read (on any host); zero: none
	// yet.
	ObservedAt    time.Time
	Live, Running int
}

// RenderProfiles writes the profile page.
func (p *Pages) RenderProfiles(w io.Writer, ch Chrome, page ProfilesPage) error {
	return p.render(w, "profiles", "Profiles", ch, "profiles", page)
}

// PlanWindow is one plan window as a bar: Type as the CLI names it
// (five_hour, seven_day, seven_day_opus), Name as a person reads it.
type PlanWindow struct {
	Type, Name  string
	Utilization float64
	ResetsAt    time.Time
}

// Percent is the bar's value.
func (w PlanWindow) Percent() int { return int(min(max(w.Utilization, 0), 1)*100 + 0.5) }

// Short names the window in the header's narrow bar.
func (w PlanWindow) Short() string {
	switch {
	case w.Type == "five_hour":
		return "5h"
	case w.Type == "seven_day":
		return "7d"
	case strings.HasPrefix(w.Type, "seven_day_"):
		return "7d " + strings.TrimPrefix(w.Type, "seven_day_")
	}
	return strings.ReplaceAll(w.Type, "_", " ")
}
