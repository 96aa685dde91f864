// Package glance is what the desktop companion's tray says at a glance,
// pure: from what the gateway reports (health, live processes, each
// profile's plan windows) the state to show (serving, degraded, paused,
// down), the tightest plan window, the tooltip; and which of the
// gateway's alerts and the keeper's events become notifications.
package glance

import (
	"fmt"
	"strings"
	"time"

	"github.com/meridian-gw/meridian/internal/notice"
)

// Window is one plan window of a profile as the gateway last heard it.
type Window struct {
	Type        string
	Utilization float64 // 0..1
	ResetsAt    time.Time
}

// Profile is one profile's state.
type Profile struct {
	Name    string
	Status  string // ok, degraded, unavailable
	Windows []Window
}

// Reading is what one look at the gateway found.
type Reading struct {
	// Reached: the gateway answered at all.
	Reached bool
	// Health is its /health status (ok, degraded, unavailable).
	Health string
	// Draining: it takes no new turns (drained or paused).
	Draining bool
	// Default is the default profile, where the gateway says it.
	Default string
	// Live are its live conversations' processes.
	Live     int
	Profiles []Profile
	// Exhausted: the companion's own gateway crashed past its restarts.
	Exhausted bool
}

// Level is the state the icon shows.
type Level string

// Levels.
const (
	Serving  Level = "serving"
	Degraded Level = "degraded"
	Paused   Level = "paused" // draining: takes no new work
	Down     Level = "down"
)

// Tight is the plan window with the least room.
type Tight struct {
	Profile, Window string
	Used            float64
	ResetsAt        time.Time
}

// Glance is the tray's state.
type Glance struct {
	Level    Level
	Live     int
	Tightest *Tight
	Tooltip  string
}

// Of is the glance of a reading.
func Of(r Reading, now time.Time) Glance {
	g := Glance{Level: level(r), Live: r.Live}
	for _, p := range r.Profiles {
		for _, w := range p.Windows {
			if !w.ResetsAt.IsZero() && !w.ResetsAt.After(now) {
				continue // reset since: the figure is old
			}
			if g.Tightest == nil || w.Utilization > g.Tightest.Used {
				g.Tightest = &Tight{Profile: p.Name, Window: w.Type, Used: w.Utilization, ResetsAt: w.ResetsAt}
			}
		}
	}
	g.Tooltip = tooltip(g, r, now)
	return g
}

func level(r Reading) Level {
	switch {
	case !r.Reached || r.Exhausted:
		return Down
	case r.Draining:
		return Paused
	case r.Health != "ok":
		return Degraded
	}
	return Serving
}

func tooltip(g Glance, r Reading, now time.Time) string {
	parts := []string{"Meridian: " + string(g.Level)}
	switch {
	case r.Exhausted:
		parts[0] = "Meridian: down (it crashed too often; restart it from the menu)"
	case !r.Reached:
		parts[0] = "Meridian: down (nothing answers)"
	}
	if r.Reached {
		parts = append(parts, fmt.Sprintf("%d live", r.Live))
	}
	if t := g.Tightest; t != nil {
		s := fmt.Sprintf("%s %s %.0f%%", t.Profile, windowName(t.Window), t.Used*100)
		if !t.ResetsAt.IsZero() {
			s += " (resets in " + until(t.ResetsAt.Sub(now)) + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " · ")
}

// windowName shortens the CLI's window types.
func windowName(t string) string {
	switch t {
	case "five_hour":
		return "5h"
	case "seven_day":
		return "7d"
	case "seven_day_opus":
		return "7d opus"
	}
	return strings.ReplaceAll(t, "_", " ")
}

func until(d time.Duration) string {
	switch {
	case d < time.Minute:
		return "under a minute"
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh %02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%d days", int(d.Hours()/24))
}

// Alert is one alert the gateway sent (its /providers/status list).
type Alert struct {
	Kind, Profile, Message string
	At                     time.Time
}

// AlertEvent is an alert as a notification's event; its key is the alert
// itself, so the same alert read twice is told once.
func AlertEvent(a Alert) notice.Event {
	cat := notice.Accounts
	title := "Meridian: " + strings.ReplaceAll(a.Kind, "_", " ")
	switch a.Kind {
	case "window", "overage":
		cat = notice.Plan
	case "budget":
		cat = notice.Budget
	}
	if a.Profile != "" {
		title += " — " + a.Profile
	}
	return notice.Event{Key: fmt.Sprintf("alert/%s/%s/%d", a.Kind, a.Profile, a.At.UnixNano()), Category: cat,
		Title: title, Body: a.Message, At: a.At}
}

// Keeper events the companion tells.
const (
	KeeperCrashed   = "crashed"
	KeeperRestarted = "restarted"
	KeeperExhausted = "exhausted"
)

// KeeperEvent is what the companion says of its own gateway's crash,
// restart or exhausted recovery (ok false: nothing to tell).
func KeeperEvent(kind, detail string, at time.Time) (notice.Event, bool) {
	switch kind {
	case KeeperRestarted:
		return notice.Event{Key: "gateway/restarted/" + at.Format(time.RFC3339Nano), Category: notice.Gateway,
			Title: "Meridian restarted", Body: "The gateway stopped and was started again.", At: at}, true
	case KeeperExhausted:
		return notice.Event{Key: "gateway/exhausted", Category: notice.Recovery, Critical: true,
			Title: "Meridian is down", Body: "It crashed again and is not restarted: " + detail + ". Restart it from the menu.", At: at}, true
	}
	return notice.Event{}, false
}

// GoneEvent is the event of a gateway the companion does not own going away.
func GoneEvent(at time.Time) notice.Event {
	return notice.Event{Key: "gateway/down", Category: notice.Gateway, Title: "Meridian is down",
		Body: "The gateway the companion shows stopped answering.", At: at}
}
