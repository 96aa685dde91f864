package dispatch

import (
	"context"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/gateway"
	"github.com/meridian-gw/meridian/internal/store"
)

// kept is the store's figures, for one test.
type kept map[string]store.PlanFigures

func (k kept) Put(_ context.Context, p string, f store.PlanFigures) (bool, error) {
	k[p] = f
	return true, nil
}
func (k kept) All(context.Context) (map[string]store.PlanFigures, error) { return k, nil }

// Standings show each profile as placing a request would see it: the
// newest figures any host kept, a window reset since counting as empty, a
// bench, and a plan-only profile's spent window.
func TestStandingsAreWhatPlacingSees(t *testing.T) {
	now := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	var asked []string
	d, by := profiles(&asked, func(by map[string]*profile) {
		by["a"].windows = []gateway.RateWindow{{Type: "five_hour", Utilization: 0.4, ResetsAt: now.Add(time.Hour), ObservedAt: now.Add(-10 * time.Minute)}}
		by["b"].windows = []gateway.RateWindow{
			{Type: "five_hour", Utilization: 1, ResetsAt: now.Add(40 * time.Minute), ObservedAt: now.Add(-time.Minute)},
			{Type: "seven_day", Utilization: 0.8, ResetsAt: now.Add(-time.Minute), ObservedAt: now.Add(-time.Minute)},
		}
	})
	another := kept{"a": {ObservedAt: now.Add(-time.Minute), Windows: []store.PlanWindow{{Name: "five_hour", Used: 0.6, ResetsAt: now.Add(time.Hour)}}}}
	d.cfg.Figures, d.cfg.Bench = another, &benches{until: map[string]time.Time{"c": now.Add(5 * time.Minute)}}
	d.cfg.Now = func() time.Time { return now }
	list := d.Profiles()
	list[1].PlanOnly = true
	d.SetProfiles(nil, list)
	_ = by

	got := d.Standings(context.Background())
	if len(got) != 3 {
		t.Fatalf("standings %+v", got)
	}
	a, b, c := got[0], got[1], got[2]
	if a.Name != "a" || !a.Default || len(a.Windows) != 1 || a.Windows[0].Used != 0.6 || !a.ObservedAt.Equal(now.Add(-time.Minute)) {
		t.Errorf("a: %+v, want the default with the newer figures another host kept (60%%)", a)
	}
	if b.Default || !b.PlanOnly || b.Spent == nil || b.Spent.Name != "five_hour" || len(b.Windows) != 2 || b.Windows[1].Used != 0 {
		t.Errorf("b: %+v, want plan-only, spent on five_hour, its seven_day reset since (0%%)", b)
	}
	if !c.BenchedUntil.Equal(now.Add(5*time.Minute)) || c.Spent != nil || len(c.Windows) != 0 {
		t.Errorf("c: %+v, want benched for 5 minutes, no figures", c)
	}
	// A profile that may draw extra usage is never "spent".
	list[1].PlanOnly = false
	d.SetProfiles(nil, list)
	if b := d.Standings(context.Background())[1]; b.Spent != nil {
		t.Errorf("b without plan-only: spent %+v", b.Spent)
	}
}
