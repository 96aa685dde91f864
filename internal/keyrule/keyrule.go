// Package keyrule decides what one API key may do: which profiles and
// models it reaches, and whether its request rate, running turns and
// daily tokens leave room for one more request, with the wait until they
// do. It is a pure core: the store supplies what it knows of a key's
// recent use and keeps the verdict.
package keyrule

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"path"
	"slices"
	"strings"
	"time"
)

// Window is the span a request rate counts over: a sliding minute, so
// there is no edge at which a burst of twice the rate gets through.
const Window = time.Minute

// Prefix starts every key Meridian issues, so a leaked one is recognisable
// in a scanner's rules and a pasted one in a bug report.
const Prefix = "mk-"

// Digest is what the store keeps of a key: the key itself is shown once.
func Digest(secret string) string {
	d := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(d[:])
}

// Limits bound a key's use; zero means no bound.
type Limits struct {
	RPM          int   // requests admitted per sliding minute
	Concurrent   int   // requests running at once
	TokensPerDay int64 // tokens per UTC day: input (cache writes included, cache reads not) and output
	// Budget is the API-equivalent cost its answers may reach per Per, in
	// millionths of a US dollar.
	Budget int64
	Per    string
}

// Use is what is known of a key's use when a request arrives.
type Use struct {
	// Hits are the admission times of its requests within the last
	// Window, in any order.
	Hits []time.Time
	// Running counts its requests still running.
	Running int
	// TokensToday sums the tokens its answers used this UTC day.
	TokensToday int64
	// Spent sums the cost of its answers in the budget's period so far.
	Spent int64
}

// Verdict is the answer to one request.
type Verdict struct {
	OK bool
	// Limit names the bound that refused it ("rpm", "concurrent",
	// "tokens-per-day", "budget"), Wait how long until it would admit one
	// more.
	Limit string
	Wait  time.Duration
}

// ConcurrentWait is the wait a refusal for running turns suggests: a turn
// ends when it ends, so the client polls at a polite pace.
const ConcurrentWait = time.Second

// Decide admits one more request at now, or names the limit it is over and
// the wait. The bounds are checked strictly: the request that would make
// the count exceed a limit is the first refused, not the one before.
func Decide(l Limits, u Use, now time.Time) Verdict {
	if l.Budget > 0 && u.Spent >= l.Budget {
		return Verdict{Limit: "budget", Wait: PeriodEnd(l.Per, now).Sub(now)}
	}
	if l.TokensPerDay > 0 && u.TokensToday >= l.TokensPerDay {
		return Verdict{Limit: "tokens-per-day", Wait: NextDay(now).Sub(now)}
	}
	if l.RPM > 0 {
		var in []time.Time
		for _, h := range u.Hits {
			if now.Sub(h) < Window {
				in = append(in, h)
			}
		}
		if len(in) >= l.RPM {
			slices.SortFunc(in, func(a, b time.Time) int { return a.Compare(b) })
			// One more fits once all but RPM-1 of them have left the
			// window: the (n-RPM)th oldest is the last to go.
			leave := in[len(in)-l.RPM].Add(Window)
			return Verdict{Limit: "rpm", Wait: leave.Sub(now)}
		}
	}
	if l.Concurrent > 0 && u.Running >= l.Concurrent {
		return Verdict{Limit: "concurrent", Wait: ConcurrentWait}
	}
	return Verdict{OK: true}
}

// A key's states.
const (
	Active  = "active"
	Revoked = "revoked"
	Expired = "expired"
)

// State is a key's state at now, from when it was revoked and when it
// expires (zero: never).
func State(revoked, expires, now time.Time) string {
	switch {
	case !revoked.IsZero():
		return Revoked
	case !expires.IsZero() && !now.Before(expires):
		return Expired
	}
	return Active
}

// Day is the UTC day a time falls in, as the store counts tokens.
func Day(t time.Time) int64 { return t.UTC().Unix() / 86400 }

// NextDay is when the UTC day after t's begins: a daily budget's reset.
func NextDay(t time.Time) time.Time { return time.Unix((Day(t)+1)*86400, 0).UTC() }

// A budget's periods: UTC days, weeks from Monday, calendar months.
const (
	PerDay   = "day"
	PerWeek  = "week"
	PerMonth = "month"
)

// CheckPer refuses a period that is not one of the three.
func CheckPer(per string) error {
	switch per {
	case PerDay, PerWeek, PerMonth:
		return nil
	}
	return fmt.Errorf("--per %q: want day, week or month", per)
}

// PeriodStart is when the budget period holding now began (UTC).
func PeriodStart(per string, now time.Time) time.Time {
	u := now.UTC()
	day := time.Date(u.Year(), u.Month(), u.Day(), 0, 0, 0, 0, time.UTC)
	switch per {
	case PerWeek:
		return day.AddDate(0, 0, -((int(day.Weekday()) + 6) % 7))
	case PerMonth:
		return time.Date(u.Year(), u.Month(), 1, 0, 0, 0, 0, time.UTC)
	}
	return day
}

// PeriodEnd is when the budget period holding now ends: the budget is
// whole again then.
func PeriodEnd(per string, now time.Time) time.Time {
	start := PeriodStart(per, now)
	switch per {
	case PerWeek:
		return start.AddDate(0, 0, 7)
	case PerMonth:
		return start.AddDate(0, 1, 0)
	}
	return start.AddDate(0, 0, 1)
}

// Micros is an amount of US dollars in millionths, as budgets count.
func Micros(usd float64) int64 { return int64(math.Round(usd * 1e6)) }

// Dollars is millionths of a dollar as dollars.
func Dollars(micros int64) float64 { return float64(micros) / 1e6 }

// Crossed says whether adding added brought spent (which includes it) to
// or past mark: the one answer that did so raises the budget's alert.
func Crossed(mark, spent, added int64) bool {
	return mark > 0 && added > 0 && spent >= mark && spent-added < mark
}

// Scope names what a key may reach; an empty list reaches everything.
type Scope struct {
	Profiles []string
	// Models are names or patterns (path.Match: "claude-sonnet-*").
	Models []string
}

// AllowsProfile reports whether the key may use a profile.
func (s Scope) AllowsProfile(profile string) bool {
	return len(s.Profiles) == 0 || slices.Contains(s.Profiles, profile)
}

// AllowsModel reports whether the key may ask for a model.
func (s Scope) AllowsModel(model string) bool {
	if len(s.Models) == 0 {
		return true
	}
	for _, m := range s.Models {
		if ok, _ := path.Match(m, model); ok {
			return true
		}
	}
	return false
}

// List splits a comma-separated flag value, dropping blanks and repeats.
func List(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// CheckModels refuses a pattern that could never match.
func CheckModels(models []string) error {
	for _, m := range models {
		if _, err := path.Match(m, ""); err != nil {
			return fmt.Errorf("model pattern %q: %w", m, err)
		}
	}
	return nil
}

// CheckName refuses a name that would not read well in a metric label, a
// URL or a log: letters, digits, '-', '_' and '.', at most 64.
func CheckName(name string) error {
	if name == "" || len(name) > 64 {
		return fmt.Errorf("a key's name is 1 to 64 characters, got %d", len(name))
	}
	for i, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return fmt.Errorf("a key's name is letters, digits, '-', '_' and '.'; character %d is %q", i+1, c)
		}
	}
	return nil
}
