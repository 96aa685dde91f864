package serve

import (
	"context"
	"log/slog"
	"time"

	"github.com/meridian-gw/meridian/internal/dispatch"
	"github.com/meridian-gw/meridian/internal/profile"
)

// A profile's plan figures come from its turns. One that has had no turn
// for probeIdleAfter (and none runs) has them read by the CLI's /usage —
// a CLI started only to ask, no model request — at most once per
// probeEvery, never on a request's path: the loop looks every probeTick.
const (
	probeIdleAfter = 15 * time.Minute
	probeEvery     = 15 * time.Minute
	probeTick      = time.Minute
)

// idleProbe reads the figures of idle profiles in the background.
type idleProbe struct {
	profiles *servedProfiles
	dispatch *dispatch.Dispatcher
	log      *slog.Logger
	now      func() time.Time

	probed map[string]time.Time // by profile: the last probe
	none   map[string]bool      // profiles whose login gives no figures
}

// run probes until ctx ends.
func (p *idleProbe) run(ctx context.Context) {
	p.probed, p.none = map[string]time.Time{}, map[string]bool{}
	t := time.NewTicker(probeTick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			p.pass(ctx)
		}
	}
}

// pass probes each profile that is due, one after another.
func (p *idleProbe) pass(ctx context.Context) {
	p.profiles.mu.Lock()
	list := append([]servedProfile(nil), p.profiles.list...)
	p.profiles.mu.Unlock()
	for _, sp := range list {
		// A token from setup-token or an API key has no /usage figures.
		if sp.p.Kind == profile.Token || sp.p.Kind == profile.API || p.none[sp.p.Name] || ctx.Err() != nil {
			continue
		}
		last := dispatch.Figures(sp.gw.RateWindows()).ObservedAt
		if !probeDue(p.now(), last, p.probed[sp.p.Name], sumRunning(sp.gw.Inflight().Backends)) {
			continue
		}
		p.probed[sp.p.Name] = p.now()
		reading := sp.gw.Plan(ctx)
		switch {
		case reading == nil || (!reading.Stale && !reading.Available):
			p.none[sp.p.Name] = true
			p.log.Debug("this profile's login gives no plan figures; it is not probed again", "profile", sp.p.Name)
		case reading.Stale:
			p.log.Debug("the idle profile's plan figures could not be read", "profile", sp.p.Name, "err", reading.Error)
		default:
			if err := p.dispatch.Share(ctx, sp.p.Name, reading.RateWindows()); err != nil {
				p.log.Warn("store: could not share an idle profile's plan figures", "profile", sp.p.Name, "err", err)
			}
		}
	}
}

// probeDue: a profile is probed when nothing runs on it, its last figures
// (from a turn) are older than probeIdleAfter, and its last probe older
// than probeEvery.
func probeDue(now, lastFigures, lastProbe time.Time, running int) bool {
	return running == 0 && now.Sub(lastFigures) >= probeIdleAfter && now.Sub(lastProbe) >= probeEvery
}
