package gateway

import (
	"context"
	"sync"
	"time"

	"github.com/meridian-gw/meridian/internal/backend"
)

// How long a plan reading is trusted, how soon a failed probe is tried
// again, how long a caller waits for a probe, and how long the probe may
// take (it starts a CLI, which then asks the account's usage endpoint).
const (
	planTTL       = time.Minute
	planFailTTL   = 10 * time.Second
	planPatience  = 5 * time.Second
	planProbeTime = 30 * time.Second
)

// PlanReading is a profile's plan limits as last read, and whether that
// reading is still current.
type PlanReading struct {
	backend.PlanUsage
	ObservedAt time.Time `json:"observed_at"`
	// Stale: the latest probe failed (or is still running) and this is an
	// older reading; Error says why.
	Stale bool   `json:"stale"`
	Error string `json:"error,omitempty"`
}

// planCache holds the probe and the last good reading.
type planCache struct {
	probe cached[backend.PlanUsage]
	mu    sync.Mutex
	good  *PlanReading
}

// Plan reads the profile's plan limits through its backend: one probe at a
// time, trusted for a minute; a caller waits at most planPatience for it.
// When the probe fails or is slow, the last good reading is served marked
// stale (nil when there never was one and the backend cannot read limits).
func (g *Gateway) Plan(ctx context.Context) *PlanReading {
	reader, ok := g.cfg.Inspector.(backend.PlanReader)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, planPatience)
	defer cancel()
	_, err := g.plans.probe.get(ctx, g, func(ctx context.Context) (backend.PlanUsage, time.Duration, error) {
		ctx, cancel := context.WithTimeout(ctx, planProbeTime)
		defer cancel()
		u, err := reader.PlanUsage(ctx)
		if err != nil {
			g.log.WarnContext(ctx, "could not read the plan's limits", "profile", g.cfg.Profile, "err", err)
			return u, planFailTTL, err
		}
		g.plans.mu.Lock()
		g.plans.good = &PlanReading{PlanUsage: u, ObservedAt: g.cfg.Now().UTC()}
		g.plans.mu.Unlock()
		return u, planTTL, nil
	})
	g.plans.mu.Lock()
	defer g.plans.mu.Unlock()
	r := PlanReading{}
	if g.plans.good != nil {
		r = *g.plans.good
	}
	switch {
	case err != nil && ctx.Err() != nil:
		r.Stale, r.Error = true, "a new reading is still being taken"
	case err != nil:
		r.Stale, r.Error = true, "the latest reading failed: "+redact(err.Error())
	}
	return &r
}

// RateWindows are a reading's windows as rate-limit events give them (the
// CLI's /usage gives shares in percent), observed when it was read; none
// for a stale reading or one without figures.
func (r *PlanReading) RateWindows() []RateWindow {
	if r == nil || r.Stale || !r.Available {
		return nil
	}
	var out []RateWindow
	for _, w := range r.PlanUsage.Windows {
		if w.Utilization == nil {
			continue
		}
		rw := RateWindow{Type: w.Name, Utilization: *w.Utilization / 100, ObservedAt: r.ObservedAt}
		if w.ResetsAt != nil {
			rw.ResetsAt = *w.ResetsAt
		}
		out = append(out, rw)
	}
	return out
}
