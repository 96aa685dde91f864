// Package retryafter computes how long a client should wait before retrying
// a refused request. It is pure: every input arrives as an argument.
package retryafter

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Bounds of every wait: never "retry immediately", never "retry never".
const (
	Min = time.Second
	Max = 24 * time.Hour
)

// Defaults when nothing better is known.
const (
	DefaultRateLimit = 60 * time.Second
	DefaultOverload  = 5 * time.Second
)

// Source names where a wait came from, for logs and tests.
type Source string

const (
	FromUpstream   Source = "upstream"    // the upstream's own retry-after or reset time
	FromHint       Source = "hint"        // a wait stated in the error text
	FromWindow     Source = "window"      // the account's last observed window reset
	FromDefault    Source = "default"     // the per-status constant
	FromNotLimited Source = "not_limited" // status carries no wait
	FromKey        Source = "key"         // an API key's own limit (rate, running, daily tokens)
)

// Facts is what is known about one refusal.
type Facts struct {
	Status int // HTTP status the client will see: 429, 503 or 529 carry a wait

	// UpstreamDelay is the upstream's own retry-after, when it survived
	// (the claude CLI reports it as the delay of its own retry).
	UpstreamDelay time.Duration
	// ResetsAt is a reset time reported for this very refusal.
	ResetsAt time.Time
	// Message is the error text, searched for a stated wait.
	Message string
	// WindowReset is the account's last observed rate-limit window reset.
	WindowReset time.Time

	Now time.Time
}

// Carries reports whether a status must carry a wait.
func Carries(status int) bool {
	return status == 429 || status == 503 || status == 529
}

// Compute returns the wait for a refusal and where it came from. Statuses
// that carry no wait return 0. Sources are tried in order: the upstream's
// own value, a wait stated in the message, the account's observed window
// reset (rate limits only), then a constant; the result is clamped to
// [Min, Max] and rounded up to whole seconds.
func Compute(f Facts) (time.Duration, Source) {
	if !Carries(f.Status) {
		return 0, FromNotLimited
	}
	if f.UpstreamDelay > 0 {
		return clamp(f.UpstreamDelay), FromUpstream
	}
	if d := until(f.ResetsAt, f.Now); d > 0 {
		return clamp(d), FromUpstream
	}
	if d := Hint(f.Message, f.Now); d > 0 {
		return clamp(d), FromHint
	}
	if f.Status == 429 {
		if d := until(f.WindowReset, f.Now); d > 0 {
			return clamp(d), FromWindow
		}
		return DefaultRateLimit, FromDefault
	}
	return DefaultOverload, FromDefault
}

// Seconds renders a wait as the integer seconds of a Retry-After header.
func Seconds(d time.Duration) int {
	return int(math.Ceil(d.Seconds()))
}

func until(t, now time.Time) time.Duration {
	if t.IsZero() {
		return 0
	}
	return t.Sub(now)
}

func clamp(d time.Duration) time.Duration {
	d = time.Duration(math.Ceil(d.Seconds())) * time.Second
	return min(max(d, Min), Max)
}

var (
	// "retry after 30 seconds", "try again in 5 minutes", "wait 2h".
	durationHint = regexp.MustCompile(`(?i)(?:retry|try again|wait)(?:\s+(?:after|in|for))?\s+(\d+(?:\.\d+)?)\s*(ms|milliseconds?|s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?)\b`)
	// "resets 10:38pm (UTC)", "resets at 22:38 UTC".
	clockHint = regexp.MustCompile(`(?i)resets?\s+(?:at\s+)?(\d{1,2})(?::(\d{2}))?\s*(am|pm)?\s*\(?(UTC|GMT)\)?`)
	// "resets at 2026-11-29T22:38:00Z".
	stampHint = regexp.MustCompile(`(?i)resets?\s+(?:at\s+)?(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2}))`)
)

// Hint extracts a wait stated in an error message, or 0. Clock times are
// understood only in UTC: resolving other zones would need the zone
// database, which is I/O.
func Hint(msg string, now time.Time) time.Duration {
	if msg == "" {
		return 0
	}
	if m := durationHint.FindStringSubmatch(msg); m != nil {
		n, err := strconv.ParseFloat(m[1], 64)
		if err == nil && n > 0 {
			return time.Duration(n * float64(unit(m[2])))
		}
	}
	if m := stampHint.FindStringSubmatch(msg); m != nil {
		if t, err := time.Parse(time.RFC3339Nano, m[1]); err == nil {
			return t.Sub(now)
		}
	}
	if m := clockHint.FindStringSubmatch(msg); m != nil {
		return untilClock(m[1], m[2], m[3], now)
	}
	return 0
}

func unit(s string) time.Duration {
	s = strings.ToLower(s)
	switch {
	case s == "ms" || strings.HasPrefix(s, "milli"):
		return time.Millisecond
	case strings.HasPrefix(s, "h"):
		return time.Hour
	case s == "m" || strings.HasPrefix(s, "min"):
		return time.Minute
	}
	return time.Second
}

// untilClock returns the time until the next occurrence of a UTC clock time.
func untilClock(hh, mm, ampm string, now time.Time) time.Duration {
	h, err := strconv.Atoi(hh)
	if err != nil {
		return 0
	}
	m := 0
	if mm != "" {
		if m, err = strconv.Atoi(mm); err != nil || m > 59 {
			return 0
		}
	}
	switch strings.ToLower(ampm) {
	case "am":
		if h < 1 || h > 12 {
			return 0
		}
		h %= 12
	case "pm":
		if h < 1 || h > 12 {
			return 0
		}
		h = h%12 + 12
	default:
		if h > 23 {
			return 0
		}
	}
	now = now.UTC()
	at := time.Date(now.Year(), now.Month(), now.Day(), h, m, 0, 0, time.UTC)
	if !at.After(now) {
		at = at.Add(24 * time.Hour)
	}
	return at.Sub(now)
}
