package gateway

import (
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/backend"
)

// Every window a rate-limit event lists is kept with its own share used,
// and the window the event is about keeps the event's status: a window 20 %
// used reads 20 %, not the 0 % of the event's top-level field, which the
// CLI fills only with a warning.
func TestRateWindowsKeepEveryWindowsShare(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	reset := now.Add(3 * time.Hour)
	var w rateWindows
	w.observe(&backend.Event{Kind: backend.RateLimit, LimitType: "five_hour", LimitStatus: "allowed_warning", ResetsAt: reset,
		Windows: []backend.LimitWindow{
			{Type: "five_hour", Utilization: 0.2, ResetsAt: reset},
			{Type: "seven_day", Status: "allowed", Utilization: 0.05, ResetsAt: reset.Add(time.Hour)},
		}}, now)
	got := w.list()
	if len(got) != 2 {
		t.Fatalf("windows %+v", got)
	}
	if five := got[0]; five.Type != "five_hour" || five.Utilization != 0.2 || five.Status != "allowed_warning" || !five.ResetsAt.Equal(reset) {
		t.Fatalf("five_hour = %+v", five)
	}
	if seven := got[1]; seven.Type != "seven_day" || seven.Utilization != 0.05 || seven.Status != "allowed" {
		t.Fatalf("seven_day = %+v", seven)
	}
	// An event without the list (an older CLI) still records its window.
	w.observe(&backend.Event{Kind: backend.RateLimit, LimitType: "five_hour", LimitStatus: "rejected", Utilization: 1}, now)
	if five := w.list()[0]; five.Status != "rejected" || five.Utilization != 1 {
		t.Fatalf("five_hour after a bare event = %+v", five)
	}
}

// A request served from paid extra usage leaves the window it is about
// used up, whatever share the event gave it: a plan-only profile must not
// be chosen again until that window resets.
func TestOverageLeavesTheWindowSpent(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	var w rateWindows
	w.observe(&backend.Event{Kind: backend.RateLimit, LimitType: "seven_day", LimitStatus: "rejected", ResetsAt: now.Add(time.Hour), Overage: true,
		Windows: []backend.LimitWindow{{Type: "seven_day", Utilization: 0.98, ResetsAt: now.Add(time.Hour)}}}, now)
	if got := w.list(); len(got) != 1 || got[0].Utilization != 1 || !got[0].Overage || got[0].Status != "rejected" {
		t.Fatalf("windows %+v", got)
	}
}
