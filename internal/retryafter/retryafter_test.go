package retryafter

import (
	"testing"
	"time"

	"pgregory.net/rapid"
)

var now = time.Date(2026, 11, 29, 20, 0, 0, 0, time.UTC)

func TestComputeOrderOfSources(t *testing.T) {
	cases := []struct {
		name string
		f    Facts
		want time.Duration
		src  Source
	}{
		{"no wait for 400", Facts{Status: 400, UpstreamDelay: time.Minute}, 0, FromNotLimited},
		{"upstream delay first", Facts{Status: 429, UpstreamDelay: 7699 * time.Millisecond, Message: "retry after 99 seconds"}, 8 * time.Second, FromUpstream},
		{"reset time of this refusal", Facts{Status: 429, ResetsAt: now.Add(2 * time.Hour), WindowReset: now.Add(time.Minute)}, 2 * time.Hour, FromUpstream},
		{"past reset ignored", Facts{Status: 429, ResetsAt: now.Add(-time.Hour)}, DefaultRateLimit, FromDefault},
		{"hint in text", Facts{Status: 429, Message: "Too many requests, please try again in 45 seconds"}, 45 * time.Second, FromHint},
		{"clock hint", Facts{Status: 429, Message: "You've hit your 5-hour limit · resets 10:38pm (UTC)"}, 2*time.Hour + 38*time.Minute, FromHint},
		{"window for rate limits", Facts{Status: 429, WindowReset: now.Add(10 * time.Minute)}, 10 * time.Minute, FromWindow},
		{"window not for overload", Facts{Status: 529, WindowReset: now.Add(10 * time.Minute)}, DefaultOverload, FromDefault},
		{"rate limit default", Facts{Status: 429}, DefaultRateLimit, FromDefault},
		{"overload default", Facts{Status: 529}, DefaultOverload, FromDefault},
		{"503 default", Facts{Status: 503}, DefaultOverload, FromDefault},
		{"clamped low", Facts{Status: 429, UpstreamDelay: time.Millisecond}, Min, FromUpstream},
		{"clamped high", Facts{Status: 429, ResetsAt: now.Add(30 * 24 * time.Hour)}, Max, FromUpstream},
	}
	for _, c := range cases {
		c.f.Now = now
		got, src := Compute(c.f)
		if got != c.want || src != c.src {
			t.Errorf("%s: got %v from %s, want %v from %s", c.name, got, src, c.want, c.src)
		}
	}
}

func TestHint(t *testing.T) {
	cases := map[string]time.Duration{
		"retry after 30 seconds":                          30 * time.Second,
		"Please wait 2 minutes":                           2 * time.Minute,
		"try again in 1.5h":                               90 * time.Minute,
		"retry after 250ms":                               250 * time.Millisecond,
		"resets at 2026-11-29T21:00:00Z":                  time.Hour,
		"resets 9pm (UTC)":                                time.Hour,
		"resets 12pm (UTC)":                               16 * time.Hour, // noon, not midnight
		"resets 12am (UTC)":                               4 * time.Hour,  // midnight
		"resets 12:30pm (UTC)":                            16*time.Hour + 30*time.Minute,
		"resets 19:30 UTC":                                23*time.Hour + 30*time.Minute,
		"resets 7pm (Europe/Berlin)":                      0, // zones other than UTC need the zone database
		"try again in a moment":                           0,
		"API Error: 529 fake 529 overloaded_error":        0,
		"resets 13pm (UTC)":                               0,
		"retry after -5 seconds, or 0 seconds, whichever": 0,
	}
	for msg, want := range cases {
		if got := Hint(msg, now); got != want {
			t.Errorf("Hint(%q) = %v, want %v", msg, got, want)
		}
	}
}

// Every status that carries a wait gets one inside the bounds, whatever
// the inputs; the rendered header is whole seconds within [1, 86400].
func TestComputeAlwaysBounded(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		f := Facts{
			Status:        rapid.SampledFrom([]int{429, 503, 529}).Draw(t, "status"),
			UpstreamDelay: time.Duration(rapid.Int64Range(-1e12, 1e15).Draw(t, "delay")),
			ResetsAt:      now.Add(time.Duration(rapid.Int64Range(-1e15, 1e15).Draw(t, "reset"))),
			WindowReset:   now.Add(time.Duration(rapid.Int64Range(-1e15, 1e15).Draw(t, "window"))),
			Message:       rapid.String().Draw(t, "msg"),
			Now:           now,
		}
		d, _ := Compute(f)
		if d < Min || d > Max {
			t.Fatalf("wait %v out of bounds", d)
		}
		if s := Seconds(d); s < 1 || s > 86400 {
			t.Fatalf("header %d out of bounds", s)
		}
	})
}
