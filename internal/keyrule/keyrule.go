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
}

// Verdict is the answer to one request.
type Verdict struct {
	OK bool
	// Limit names the bound that refused it ("rpm", "concurrent",
	// "tokens-per-day"), Wait how long until it would admit one more.
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
