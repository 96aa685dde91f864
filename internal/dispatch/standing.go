package dispatch

import (
	"context"
	"time"

	"github.com/meridian-gw/meridian/internal/gateway"
	"github.com/meridian-gw/meridian/internal/headroom"
	"github.com/meridian-gw/meridian/internal/store"
)

// Standing is a profile as dispatch sees it when it places a request: the
// plan windows it ranks by (the newest figures any host kept), and what
// keeps the profile out, if anything.
type Standing struct {
	Name string
	// Gateway answers for the profile (nil where dispatch is tested alone).
	Gateway                     *gateway.Gateway
	Default, Fallback, PlanOnly bool
	// Windows are the plan windows and ObservedAt when their figures were
	// read; both zero before a turn or check reported any.
	Windows    []store.PlanWindow
	ObservedAt time.Time
	// BenchedUntil: refused for its rate limit, it is passed over until
	// then (on every host).
	BenchedUntil time.Time
	// Spent is a plan-only profile's used-up window, which keeps it out
	// until it resets; nil when none is.
	Spent *store.PlanWindow
}

// Standings are the profiles in priority order as dispatch sees them now
// (the default alone when there are no named profiles). It reads the store
// at most once per sharedTTL, as placing a request does.
func (d *Dispatcher) Standings(ctx context.Context) []Standing {
	set := d.set.Load()
	v := d.shared(ctx)
	now := d.cfg.Now()
	if len(set.list) == 0 {
		if set.answerer == nil {
			return nil
		}
		return []Standing{d.standing(v, set.answerer, now, true, Profile{Gateway: set.def})}
	}
	out := make([]Standing, 0, len(set.list))
	for _, p := range set.list {
		out = append(out, d.standing(v, p.answers(), now, p.answers() == set.answerer, p))
	}
	return out
}

func (d *Dispatcher) standing(v *sharedView, a Answerer, now time.Time, def bool, p Profile) Standing {
	name := a.Profile()
	f := newestFigures(v, name, a)
	s := Standing{Name: name, Gateway: p.Gateway, Default: def, Fallback: p.Fallback, PlanOnly: p.PlanOnly,
		ObservedAt: f.ObservedAt, BenchedUntil: d.bench.Until(name, now)}
	for _, w := range f.Windows {
		if !w.ResetsAt.IsZero() && !w.ResetsAt.After(now) {
			w.Used, w.ResetsAt = 0, time.Time{} // reset since it was read
		}
		s.Windows = append(s.Windows, w)
	}
	// Without a model, only the windows every model shares can keep it out.
	if spent, ok := headroom.Spent(windows(f), "", now); ok && p.PlanOnly {
		for i := range s.Windows {
			if s.Windows[i].Name == spent.Name {
				s.Spent = &s.Windows[i]
			}
		}
	}
	return s
}

// Placing says how a request that names no profile is placed now, and the
// share of a plan window past which a running conversation moves on (by
// headroom only).
func (d *Dispatcher) Placing() (Accounts, float64) {
	if d.cfg.Accounts == ByPriority || len(d.set.Load().list) < 2 {
		return ByPriority, 0
	}
	return ByHeadroom, headroom.Policy{MoveAt: d.cfg.MoveAt}.Threshold()
}
