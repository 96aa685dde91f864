package glance

import (
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/notice"
)

var now = time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)

func TestTheTightestWindowAndTheTooltip(t *testing.T) {
	r := Reading{Reached: true, Health: "ok", Live: 3, Profiles: []Profile{
		{Name: "home", Windows: []Window{{Type: "five_hour", Utilization: 0.4, ResetsAt: now.Add(2 * time.Hour)}}},
		{Name: "work", Windows: []Window{
			{Type: "five_hour", Utilization: 0.82, ResetsAt: now.Add(90 * time.Minute)},
			{Type: "seven_day", Utilization: 0.99, ResetsAt: now.Add(-time.Minute)}, // reset since
		}},
	}}
	g := Of(r, now)
	if g.Level != Serving || g.Tightest == nil || g.Tightest.Profile != "work" || g.Tightest.Window != "five_hour" {
		t.Fatalf("%+v %+v", g, g.Tightest)
	}
	if want := "Meridian: serving · 3 live · work 5h 82% (resets in 1h 30m)"; g.Tooltip != want {
		t.Fatalf("tooltip %q, want %q", g.Tooltip, want)
	}
}

func TestLevels(t *testing.T) {
	for _, c := range []struct {
		r    Reading
		want Level
		tip  string
	}{
		{Reading{}, Down, "Meridian: down (nothing answers)"},
		{Reading{Reached: true, Health: "ok", Exhausted: true}, Down, "Meridian: down (it crashed too often; restart it from the menu) · 0 live"},
		{Reading{Reached: true, Health: "ok", Draining: true}, Paused, "Meridian: paused · 0 live"},
		{Reading{Reached: true, Health: "degraded", Live: 1}, Degraded, "Meridian: degraded · 1 live"},
	} {
		if g := Of(c.r, now); g.Level != c.want || g.Tooltip != c.tip {
			t.Errorf("%+v: %s %q, want %s %q", c.r, g.Level, g.Tooltip, c.want, c.tip)
		}
	}
}

func TestEvents(t *testing.T) {
	a := Alert{Kind: "window", Profile: "work", Message: "profile work: its five_hour window is at 80%", At: now}
	e := AlertEvent(a)
	if e.Category != notice.Plan || e.Title != "Meridian: window — work" || e.Key != AlertEvent(a).Key {
		t.Fatalf("%+v", e)
	}
	if b := AlertEvent(Alert{Kind: "benched", Profile: "work", At: now}); b.Category != notice.Accounts || b.Key == e.Key {
		t.Fatalf("%+v", b)
	}
	if ev, ok := KeeperEvent(KeeperExhausted, "it crashed 4 times within 10m0s", now); !ok || !ev.Critical || ev.Category != notice.Recovery {
		t.Fatalf("%+v", ev)
	}
	if _, ok := KeeperEvent(KeeperCrashed, "", now); ok {
		t.Fatal("a crash that is restarted is told by its restart")
	}
}
