package gateway

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/meridian-gw/meridian/internal/backend"
)

// RateWindow is the last state the CLI reported for one of the account's
// rate-limit windows.
type RateWindow struct {
	Type        string    `json:"type"` // five_hour, seven_day, … ("default" when the CLI names none)
	Status      string    `json:"status"`
	Utilization float64   `json:"utilization"` // 0..1, when reported
	ResetsAt    time.Time `json:"resets_at,omitzero"`
	ObservedAt  time.Time `json:"observed_at"`
	// Overage: the upstream said it served the last request from the
	// account's paid extra usage, this window being spent.
	Overage bool `json:"overage,omitempty"`
}

// rateWindows keeps the last report per window type.
type rateWindows struct {
	mu sync.Mutex
	by map[string]RateWindow
}

// observe keeps what a RateLimit event says: every window it lists with
// its own share and reset, and the window it is about (whose status the
// event's own, a warning's utilization included, completes).
func (w *rateWindows) observe(ev *backend.Event, now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.by == nil {
		w.by = map[string]RateWindow{}
	}
	t := cmp.Or(ev.LimitType, "default")
	about := RateWindow{Type: t, Status: ev.LimitStatus, Utilization: ev.Utilization, ResetsAt: ev.ResetsAt, ObservedAt: now}
	for _, lw := range ev.Windows {
		rw := RateWindow{Type: lw.Type, Status: lw.Status, Utilization: lw.Utilization, ResetsAt: lw.ResetsAt, ObservedAt: now}
		if lw.Type == t {
			rw.Status = cmp.Or(rw.Status, about.Status)
			rw.ResetsAt = cmp.Or(rw.ResetsAt, about.ResetsAt)
			about = rw
		}
		w.by[lw.Type] = rw
	}
	if ev.Overage {
		// Served from extra usage: whatever share it gave, the window the
		// event is about is used up until it resets.
		about.Utilization, about.Overage = max(about.Utilization, 1), true
	}
	w.by[t] = about
}

func (w *rateWindows) list() []RateWindow {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]RateWindow, 0, len(w.by))
	for _, r := range w.by {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b RateWindow) int { return cmp.Compare(a.Type, b.Type) })
	return out
}

// RateWindows is what the CLI last reported about the profile's rate-limit
// windows (rate_limit_event lines), oldest type first.
func (g *Gateway) RateWindows() []RateWindow { return g.windows.list() }

// Provider is one backend under one identity, as /providers shows it.
type Provider struct {
	Backend string `json:"backend"`
	// Profile is the identity the backend runs under; one identity's
	// figures are never mixed with another's.
	Profile    string        `json:"profile"`
	Status     string        `json:"status"` // ok, degraded or unavailable
	CLIFound   bool          `json:"cli_found"`
	CLIVersion string        `json:"cli_version,omitempty"`
	Auth       *backend.Auth `json:"auth,omitempty"`
	Error      string        `json:"error,omitempty"`
	RateLimits []RateWindow  `json:"rate_limits"`
	// WindowSource and PlanSource say where the CLI's rate-limit windows
	// and plan limits come from; no WindowSource: it reports none.
	WindowSource string      `json:"window_source,omitempty"`
	PlanSource   string      `json:"plan_source,omitempty"`
	Processes    BackendLoad `json:"processes"`
	CheckedAt    time.Time   `json:"checked_at"`
}

// Providers reports each backend and profile: today one backend under the
// environment's identity.
func (g *Gateway) Providers(ctx context.Context) []Provider {
	h := g.Health(ctx)
	cli := h.CLI()
	p := Provider{Backend: g.cfg.CLI.Backend, Profile: g.cfg.Profile, Status: h.Status, CLIFound: cli.Found,
		CLIVersion: cli.Version, Auth: cli.Auth, Error: cli.Error, RateLimits: g.windows.list(),
		WindowSource: g.cfg.CLI.WindowSource, PlanSource: g.cfg.CLI.PlanSource,
		Processes: g.Inflight().Backends[g.cfg.CLI.Backend], CheckedAt: g.cfg.Now()}
	return []Provider{p}
}
