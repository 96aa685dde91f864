// Package alerts tells the operator what happens to the accounts: a plan
// window crossing a threshold, extra usage starting, a profile benched.
// Each crossing is one alert, claimed in the store so that several hosts
// seeing it send it once, and posted to every sink configured (a webhook,
// JSON or Slack-shaped, signed with the sink's secret), retried within a
// bound and never on a request's path. This file is the pure part: which
// alerts figures call for, and what they say.
package alerts

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// Kinds of alerts.
const (
	KindWindow  = "window"  // a plan window crossed a threshold
	KindOverage = "overage" // the upstream began to serve from paid extra usage
	KindBenched = "benched" // a profile refused for its limit and is passed over
	KindBack    = "back"    // a benched profile takes requests again
	// KindLoggedOut: the upstream refused a profile's credentials.
	KindLoggedOut = "logged_out"
	KindTest      = "test" // `meridian alert test`
	// KindBudget: an API key's spend reached its alert mark or its
	// dollar budget.
	KindBudget = "budget"
)

// DefaultThresholds are the shares of a window that raise an alert.
var DefaultThresholds = []float64{0.8, 1}

// Window is one plan window of a profile as last reported.
type Window struct {
	Name     string
	Used     float64 // 0..1
	ResetsAt time.Time
	Overage  bool
}

// Alert is one thing the operator is told. Key names the crossing: the
// same crossing seen twice (or by two hosts) has the same key.
type Alert struct {
	Key      string    `json:"-"`
	Kind     string    `json:"kind"`
	Profile  string    `json:"profile,omitempty"`
	APIKey   string    `json:"api_key,omitempty"` // a budget's key, by name
	Window   string    `json:"window,omitempty"`
	Used     float64   `json:"used,omitempty"`
	ResetsAt time.Time `json:"resets_at,omitzero"`
	Message  string    `json:"message"`
	Host     string    `json:"host,omitempty"`
	At       time.Time `json:"at"`
}

// Crossings are the alerts a profile's windows call for: for each window,
// the highest threshold it has reached (once per window period: the key
// holds the reset), and extra usage once per period it is drawn in.
func Crossings(profile string, windows []Window, thresholds []float64, now time.Time) []Alert {
	var out []Alert
	for _, w := range windows {
		if !w.ResetsAt.IsZero() && !w.ResetsAt.After(now) {
			continue // past its reset: the figures are old
		}
		period := strconv.FormatInt(w.ResetsAt.Unix(), 10)
		if w.Overage {
			out = append(out, Alert{Key: KindOverage + "/" + profile + "/" + w.Name + "/" + period, Kind: KindOverage, Profile: profile,
				Window: w.Name, Used: w.Used, ResetsAt: w.ResetsAt, At: now,
				Message: fmt.Sprintf("profile %s: its %s window is spent and the upstream now serves it from paid extra usage%s", profile, w.Name, until(w.ResetsAt))})
		}
		reached := -1.0
		for _, t := range thresholds {
			if w.Used >= t && t > reached {
				reached = t
			}
		}
		if reached < 0 {
			continue
		}
		pct := int(math.Round(reached * 100))
		out = append(out, Alert{Key: fmt.Sprintf("%s/%s/%s/%d/%s", KindWindow, profile, w.Name, pct, period), Kind: KindWindow, Profile: profile,
			Window: w.Name, Used: w.Used, ResetsAt: w.ResetsAt, At: now,
			Message: fmt.Sprintf("profile %s: its %s window is %d%% used (alert at %d%%)%s", profile, w.Name, int(math.Round(w.Used*100)), pct, until(w.ResetsAt))})
	}
	return out
}

// Benched is the alert of a profile benched until a time (one per bench:
// the key holds its end, to the minute).
func Benched(profile string, until time.Time, now time.Time) Alert {
	return Alert{Key: fmt.Sprintf("%s/%s/%d", KindBenched, profile, until.Truncate(time.Minute).Unix()), Kind: KindBenched, Profile: profile,
		ResetsAt: until, At: now,
		Message: fmt.Sprintf("profile %s refused a request for its rate limit: no request goes to it until %s", profile, until.UTC().Format("15:04 UTC, Jan 2"))}
}

// Back is the alert of a profile whose bench (until a time) has ended.
func Back(profile string, until time.Time, now time.Time) Alert {
	return Alert{Key: fmt.Sprintf("%s/%s/%d", KindBack, profile, until.Truncate(time.Minute).Unix()), Kind: KindBack, Profile: profile, At: now,
		Message: fmt.Sprintf("profile %s takes requests again", profile)}
}

// LoggedOut is the alert of a profile whose credentials the upstream
// refused: once a day while it lasts.
func LoggedOut(profile string, now time.Time) Alert {
	return Alert{Key: fmt.Sprintf("%s/%s/%s", KindLoggedOut, profile, now.UTC().Format(time.DateOnly)), Kind: KindLoggedOut, Profile: profile, At: now,
		Message: fmt.Sprintf("profile %s is not logged in (the upstream refused its credentials): log it in again with `meridian profile login %s`", profile, profile)}
}

// Budget is the alert of a key's spend reaching its alert mark (hard
// false) or its whole budget, once per mark and period (the key holds the
// period's end). Amounts are US dollars of API-equivalent cost.
func Budget(key string, spent, mark, budget float64, per string, ends time.Time, hard bool, now time.Time) Alert {
	a := Alert{Kind: KindBudget, APIKey: key, ResetsAt: ends, Used: spent / budget, At: now,
		Key: fmt.Sprintf("%s/%s/%t/%d", KindBudget, key, hard, ends.Unix())}
	if hard {
		a.Message = fmt.Sprintf("API key %s has spent its budget: $%.2f of $%.2f this %s; its requests are refused until %s",
			key, spent, budget, per, ends.UTC().Format("15:04 UTC, Jan 2"))
	} else {
		a.Message = fmt.Sprintf("API key %s has spent $%.2f of its $%.2f budget this %s (alert at $%.2f)%s",
			key, spent, budget, per, mark, until(ends))
	}
	return a
}

func until(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return "; it resets at " + t.UTC().Format("15:04 UTC, Jan 2")
}
