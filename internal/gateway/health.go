package gateway

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/meridian-gw/meridian/internal/backend"
)

// How long backend facts are trusted, how long probing them may take, and
// how long a health check waits for a probe. A probe outlives an impatient
// caller: a slow `claude auth status` finishes and serves the next one.
const (
	authTTL        = 30 * time.Second
	authFailTTL    = 5 * time.Second
	versionTTL     = 10 * time.Minute
	modelsTTL      = 10 * time.Minute
	modelsFailTTL  = 30 * time.Second
	probeDeadline  = 90 * time.Second
	healthPatience = 5 * time.Second
)

// Health is the gateway's state for GET /health.
type Health struct {
	Status string `json:"status"` // ok, degraded or unavailable
	// The CLI, under its own name: claude, agy for Antigravity, codex.
	Claude    *CLIHealth `json:"claude,omitempty"`
	Agy       *CLIHealth `json:"agy,omitempty"`
	Codex     *CLIHealth `json:"codex,omitempty"`
	Processes Slots      `json:"processes"`
}

// CLI is the backend's CLI, whichever it is.
func (h Health) CLI() CLIHealth {
	switch {
	case h.Claude != nil:
		return *h.Claude
	case h.Agy != nil:
		return *h.Agy
	case h.Codex != nil:
		return *h.Codex
	}
	return CLIHealth{}
}

// CLIHealth describes the CLI. /health answers without a key, so it names
// no local path: not the CLI's, nor any in an error.
type CLIHealth struct {
	Found   bool          `json:"found"`
	Version string        `json:"version,omitempty"`
	Auth    *backend.Auth `json:"auth,omitempty"`
	Error   string        `json:"error,omitempty"`
}

// Slots is the admission state.
type Slots struct {
	Running int `json:"running"`
	Waiting int `json:"waiting"`
	Max     int `json:"max"`
}

// Health probes the CLI (cached briefly, so a health-check storm starts no
// process storm) and reports admission state.
func (g *Gateway) Health(ctx context.Context) Health {
	ctx, cancel := context.WithTimeout(ctx, healthPatience)
	defer cancel()
	inUse, waiting, size := g.slots.Stats()
	cli := &CLIHealth{}
	h := Health{Status: "ok", Processes: Slots{Running: inUse, Waiting: waiting, Max: size}, Claude: cli}
	switch g.cfg.CLI.Name {
	case "agy":
		h.Claude, h.Agy = nil, cli
	case "codex":
		h.Claude, h.Codex = nil, cli
	}
	if _, err := g.cfg.Inspector.Locate(); err != nil {
		h.Status, cli.Error = "unavailable", redact(err.Error())
		return h
	}
	cli.Found = true
	version, verr := g.health.version.get(ctx, g, func(ctx context.Context) (string, time.Duration, error) {
		v, err := g.cfg.Inspector.Version(ctx)
		return v, versionTTL, err
	})
	auth, aerr := g.health.auth.get(ctx, g, func(ctx context.Context) (backend.Auth, time.Duration, error) {
		a, err := g.cfg.Inspector.Auth(ctx)
		if err != nil || !a.LoggedIn {
			return a, authFailTTL, err
		}
		return a, authTTL, nil
	})
	cli.Version = version
	switch {
	case errors.Is(verr, context.DeadlineExceeded), errors.Is(aerr, context.DeadlineExceeded):
		h.Status, cli.Error = "degraded", "the "+g.cfg.CLI.Name+" CLI is slow to answer its health probe; it goes on in the background and serves the next check"
	case verr != nil:
		h.Status, cli.Error = "degraded", g.cfg.CLI.Name+" version: "+redact(verr.Error())
	case aerr != nil:
		h.Status, cli.Error = "degraded", g.cfg.CLI.Name+" login check: "+redact(aerr.Error())
	case !auth.LoggedIn:
		cli.Auth = &auth
		h.Status, cli.Error = "unavailable", g.cfg.CLI.Name+" is not logged in: "+g.cfg.CLI.LoginHint
	default:
		cli.Auth = &auth
	}
	return h
}

// Close closes the idle live processes, ends the background probes and
// waits for them. Call it after the requests are done.
func (g *Gateway) Close() {
	g.stop()
	g.pool.Close()
	g.probes.Wait()
	if g.cfg.Transcripts != nil {
		g.cfg.Transcripts.Close()
	}
	if c, ok := g.cfg.Backend.(backend.Closer); ok {
		c.Close()
	}
}

// Models lists the backend's models, cached.
func (g *Gateway) Models(ctx context.Context) ([]backend.Model, error) {
	return g.models.get(ctx, g, func(ctx context.Context) ([]backend.Model, time.Duration, error) {
		m, err := g.cfg.Inspector.Models(ctx)
		if err != nil {
			return nil, modelsFailTTL, err
		}
		return m, modelsTTL, nil
	})
}

type healthCache struct {
	version cached[string]
	auth    cached[backend.Auth]
}

type modelCache = cached[[]backend.Model]

// cached holds one probed value. Concurrent callers share one probe; the
// probe runs under its own deadline, detached from any one caller, so a
// caller that leaves does not fail the others.
type cached[T any] struct {
	mu      sync.Mutex
	val     T
	err     error
	expires time.Time
	running chan struct{}
}

func (c *cached[T]) get(ctx context.Context, g *Gateway, probe func(context.Context) (T, time.Duration, error)) (T, error) {
	c.mu.Lock()
	if g.cfg.Now().Before(c.expires) {
		defer c.mu.Unlock()
		return c.val, c.err
	}
	running := c.running
	if running == nil {
		running = make(chan struct{})
		c.running = running
		g.probes.Go(func() { c.refresh(g.closing, running, g.cfg.Now, probe) })
	}
	c.mu.Unlock()
	select {
	case <-running:
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.val, c.err
}

func (c *cached[T]) refresh(parent context.Context, done chan struct{}, now func() time.Time, probe func(context.Context) (T, time.Duration, error)) {
	ctx, cancel := context.WithTimeout(parent, probeDeadline)
	defer cancel()
	start := now()
	v, ttl, err := probe(ctx)
	c.mu.Lock()
	c.val, c.err, c.expires, c.running = v, err, start.Add(ttl), nil
	c.mu.Unlock()
	close(done)
}
