package dispatch

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/anthropic"
	"github.com/meridian-gw/meridian/internal/gateway"
	"github.com/meridian-gw/meridian/internal/store"
	"github.com/meridian-gw/meridian/internal/testkit"
)

func fiveHour(used float64, now time.Time, resetIn time.Duration) []gateway.RateWindow {
	return []gateway.RateWindow{{Type: "five_hour", Status: "allowed", Utilization: used, ResetsAt: now.Add(resetIn)}}
}

// By headroom, a new conversation goes to the profile with the most room
// in its plan windows; one a profile served stays there while it has room
// and moves, with the window that made it, once past the threshold; a
// refusal moves the request on as failover does; and each answer says why.
func TestHeadroomChoosesAndExplains(t *testing.T) {
	now := time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)
	type heard struct{ profile, reason string }
	for _, c := range []struct {
		name     string
		used     map[string]float64 // per profile; absent: no figures
		servedBy string
		refusing string
		accounts Accounts
		want     []heard
	}{
		{name: "a new conversation", used: map[string]float64{"a": 0.7, "b": 0.2, "c": 0.96},
			want: []heard{{"b", "headroom five_hour 20%"}}},
		{name: "no figures anywhere", want: []heard{{"a", "priority"}}},
		{name: "figures beat none", used: map[string]float64{"c": 0.5}, want: []heard{{"c", "headroom five_hour 50%"}}},
		{name: "a running one stays", used: map[string]float64{"a": 0.7, "b": 0.2}, servedBy: "a", want: []heard{{"a", "sticky"}}},
		{name: "a running one past the threshold moves", used: map[string]float64{"a": 0.2, "b": 0.7, "c": 0.96}, servedBy: "c",
			want: []heard{{"a", "moved: five_hour 96%"}}},
		{name: "a refusal moves on", used: map[string]float64{"a": 0.7, "b": 0.2}, refusing: "b",
			want: []heard{{"b", "headroom five_hour 20%"}, {"a", "moved: benched"}}},
		{name: "by priority, figures do not count", accounts: ByPriority, used: map[string]float64{"a": 0.9, "b": 0.2},
			want: []heard{{"a", "default"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var asked []string
			d, _ := profiles(&asked, func(by map[string]*profile) {
				by["a"].servedBy = c.servedBy
				for name, u := range c.used {
					by[name].windows = fiveHour(u, now, time.Hour)
				}
				if c.refusing != "" {
					by[c.refusing].refuse = refusal(429, time.Minute)
				}
			})
			d.cfg.Now, d.cfg.Accounts = func() time.Time { return now }, c.accounts
			var got []heard
			call := Call{Request: gateway.Request{Body: &anthropic.MessagesRequest{Model: "claude-sonnet-4-5"}},
				Answering: func(p, reason string) { got = append(got, heard{p, reason}) }}
			if err := d.Answer(context.Background(), call, &output{}); err != nil || !slices.Equal(got, c.want) {
				t.Fatalf("heard %v (%v), want %v", got, err, c.want)
			}
		})
	}
}

// The routing decision with ten profiles, each with its figures: a new
// conversation placed, and a running one kept. The bound is 50 µs
// at the median.
func BenchmarkHeadroomRoute(b *testing.B) {
	now := time.Now()
	var asked []string
	by := map[string]*profile{}
	var list []Profile
	for i := range 10 {
		name := fmt.Sprintf("p%d", i)
		p := &profile{name: name, size: 2, asked: &asked,
			windows: append(fiveHour(float64(i*7%10)/10, now, time.Duration(i+1)*time.Hour),
				gateway.RateWindow{Type: "seven_day", Utilization: 0.3, ResetsAt: now.Add(90 * time.Hour)})}
		by[name] = p
		list = append(list, Profile{Name: name, Fallback: true, answerer: p})
	}
	d := New(Config{Profiles: list, def: by["p0"]})
	ctx := context.Background()
	for _, side := range []struct{ name, servedBy string }{{"new", ""}, {"running", "p3"}} {
		by["p0"].servedBy = side.servedBy
		call := Call{Request: gateway.Request{Body: &anthropic.MessagesRequest{Model: "claude-sonnet-4-5"}}}
		took := make([]time.Duration, 0, b.N)
		for range b.N {
			t0 := time.Now()
			p := d.plan(ctx, d.set.Load(), call)
			took = append(took, time.Since(t0))
			if len(p.order) != 10 {
				b.Fatalf("order %d", len(p.order))
			}
		}
		b.ReportMetric(float64(testkit.Median(took).Nanoseconds())/1e3, side.name+"-p50-us")
	}
}

// A plan-only profile whose plan figures say a window is used up is passed
// over until that window resets, and with nothing else the wait is until
// then; a profile that may draw extra usage is still tried, last.
func TestAPlanOnlyProfileWithItsPlanSpentIsPassedOver(t *testing.T) {
	now := time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)
	var asked []string
	d, by := profiles(&asked, func(by map[string]*profile) {
		by["a"].windows = fiveHour(1, now, 40*time.Minute)
		by["b"].windows = fiveHour(0.9, now, time.Hour)
		by["c"].refuse = refusal(429, 3*time.Hour)
	})
	list := d.Profiles()
	list[0].PlanOnly = true
	d.SetProfiles(nil, list)
	d.cfg.Now = func() time.Time { return now }
	var heard []string
	call := Call{Request: gateway.Request{Body: &anthropic.MessagesRequest{Model: "m"}},
		Answering: func(p, reason string) { heard = append(heard, p+": "+reason) }}
	if err := d.Answer(context.Background(), call, &output{}); err != nil || !slices.Equal(heard, []string{"b: headroom five_hour 90%"}) {
		t.Fatalf("heard %v (%v)", heard, err)
	}
	by["b"].refuse = refusal(429, 2*time.Hour)
	heard = nil
	err := d.Answer(context.Background(), call, &output{})
	var ge *gateway.Error
	if !errors.As(err, &ge) || ge.Status != 429 || ge.RetryAfter != 40*time.Minute || !slices.Equal(heard, []string{"b: headroom five_hour 90%", "c: moved: benched"}) {
		t.Fatalf("heard %v, got %v: want a 429 until a's window resets", heard, err)
	}
	// A profile that may draw extra usage is tried even when spent.
	list[0].PlanOnly = false
	d.SetProfiles(nil, list)
	heard = nil
	if err := d.Answer(context.Background(), call, &output{}); err != nil || !slices.Equal(heard, []string{"a: headroom five_hour 100%"}) {
		t.Fatalf("heard %v (%v)", heard, err)
	}
}

// watcher records what dispatch tells it.
type watcher struct{ heard []string }

func (w *watcher) Figures(string, store.PlanFigures) {}
func (w *watcher) Bench(p string, _ time.Time)       { w.heard = append(w.heard, "bench "+p) }
func (w *watcher) Reopened(p string, _ time.Time)    { w.heard = append(w.heard, "back "+p) }
func (w *watcher) LoggedOut(p string)                { w.heard = append(w.heard, "logged out "+p) }

// benches is the store's record of benches, for one test.
type benches struct{ until map[string]time.Time }

func (b *benches) Put(_ context.Context, p string, until time.Time) (time.Time, error) {
	if until.After(b.until[p]) {
		b.until[p] = until
	}
	return b.until[p], nil
}

func (b *benches) Benched(_ context.Context, now time.Time) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	for p, u := range b.until {
		if u.After(now) {
			out[p] = u
		}
	}
	return out, nil
}

func (b *benches) Clear(_ context.Context, p string) error { delete(b.until, p); return nil }

// The watcher (package alerts) hears a bench when a profile refuses, the
// profile back once its bench has ended (seen at the next request), and a
// profile whose credentials were refused.
func TestTheWatcherHearsBenchesAndLogins(t *testing.T) {
	now := time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)
	var asked []string
	d, by := profiles(&asked, func(by map[string]*profile) { by["a"].refuse = refusal(429, time.Minute) })
	w := &watcher{}
	d.cfg.Now, d.cfg.Watch, d.cfg.Bench = func() time.Time { return now }, w, &benches{until: map[string]time.Time{}}
	ctx := context.Background()
	if err := d.Answer(ctx, Call{}, &output{}); err != nil {
		t.Fatal(err)
	}
	by["a"].refuse = nil
	now = now.Add(2 * time.Minute)
	by["b"].refuse = &gateway.Error{Status: http.StatusUnauthorized, Type: anthropic.ErrAuthentication, Message: "refused"}
	d.cfg.Accounts = ByPriority
	_ = d.Answer(ctx, Call{}, &output{})
	by["a"].servedBy = "b" // a conversation b served: b answers it
	_ = d.Answer(ctx, Call{}, &output{})
	if !slices.Equal(w.heard, []string{"bench a", "back a", "logged out b"}) {
		t.Fatalf("heard %v", w.heard)
	}
}
