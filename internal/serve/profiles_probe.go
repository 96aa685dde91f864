package serve

import (
	"context"
	"log/slog"
	"time"

	"github.com/meridian-gw/meridian/internal/backend"
	"github.com/meridian-gw/meridian/internal/backend/claude"
	"github.com/meridian-gw/meridian/internal/backend/codex"
	"github.com/meridian-gw/meridian/internal/dispatch"
	"github.com/meridian-gw/meridian/internal/gateway"
	"github.com/meridian-gw/meridian/internal/profile"
)

// What `meridian profile` asks about a profile, answered with its CLI
// (claude, or codex for the codex kinds) in the profile's own context and
// the data dir's store.

// profileAuthWait bounds the login check of one profile.
const profileAuthWait = 20 * time.Second

// ProfilePlanWait bounds the wait for a profile's plan limits: a CLI that
// cannot reach its account's endpoints retries for many seconds.
const ProfilePlanWait = 10 * time.Second

// CLIPaths are the CLIs' binaries the profile commands use: a profile
// of a codex kind asks codex, any other claude.
type CLIPaths struct {
	Claude, Codex string
}

// inspector is the CLI a profile is for, in the profile's context.
func (c CLIPaths) inspector(p profile.Profile, env []string) interface {
	backend.Inspector
	backend.PlanReader
} {
	if p.Kind.CLI() == "codex" {
		return codex.New(codex.Config{Path: c.Codex, Env: env})
	}
	return claude.New(claude.Config{Path: c.Claude, Env: env})
}

// ProfileAuth asks the CLI, in the profile's context, whether it is
// logged in; on failure it says why instead.
func ProfileAuth(ctx context.Context, s *profile.Store, p profile.Profile, clis CLIPaths, environ []string) (*backend.Auth, string) {
	env, err := s.Env(p, environ)
	if err != nil {
		return nil, err.Error()
	}
	ctx, cancel := context.WithTimeout(ctx, profileAuthWait)
	defer cancel()
	a, err := clis.inspector(p, env).Auth(ctx)
	if err != nil {
		return nil, "unknown: " + err.Error()
	}
	return &a, ""
}

// ProfilePlan reads the plan's rate limits with the CLI in the profile's
// context; nil when they could not be read in ProfilePlanWait.
func ProfilePlan(ctx context.Context, s *profile.Store, p profile.Profile, clis CLIPaths, environ []string) *backend.PlanUsage {
	env, err := s.Env(p, environ)
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, ProfilePlanWait)
	defer cancel()
	u, err := clis.inspector(p, env).PlanUsage(ctx)
	if err != nil {
		return nil
	}
	return &u
}

// ProfileBusy reports whether a turn runs on a profile now, in any
// meridian sharing the store (the data dir's, or the PostgreSQL database
// storeDSN names): its turn leases are held.
func ProfileBusy(ctx context.Context, dataDir, storeDSN, name string) (bool, error) {
	st, err := openStores(ctx, Config{DataDir: dataDir, Store: storeDSN}, slog.New(slog.DiscardHandler))
	if err != nil {
		return false, err
	}
	defer st.close()
	n, err := st.shared.Leases.Held(ctx, name, time.Now())
	return n > 0, err
}

// ProfileUnbench reopens a profile for every meridian sharing the store
// (the data dir's, or the PostgreSQL database storeDSN names): its bench
// ends and its figures are forgotten until its next turn reports them.
// Each running host takes it within a second.
func ProfileUnbench(ctx context.Context, dataDir, storeDSN, name string) error {
	st, err := openStores(ctx, Config{DataDir: dataDir, Store: storeDSN}, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	defer st.close()
	return dispatch.Reopen(ctx, st.shared.Bench, st.shared.Figures, name, time.Now())
}

// ProfileShareFigures keeps a plan reading, read now, as the profile's
// figures for every meridian sharing the store, when it has any.
func ProfileShareFigures(ctx context.Context, dataDir, storeDSN, name string, u backend.PlanUsage) error {
	reading := gateway.PlanReading{PlanUsage: u, ObservedAt: time.Now()}
	f := dispatch.Figures(reading.RateWindows())
	if len(f.Windows) == 0 {
		return nil
	}
	st, err := openStores(ctx, Config{DataDir: dataDir, Store: storeDSN}, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	defer st.close()
	_, err = st.shared.Figures.Put(ctx, name, f)
	return err
}
