package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"

	"github.com/meridian-gw/meridian/internal/backend/claude"
	"github.com/meridian-gw/meridian/internal/gateway"
	"github.com/meridian-gw/meridian/internal/httpapi"
	"github.com/meridian-gw/meridian/internal/openai"
	"github.com/meridian-gw/meridian/internal/responses"
	"github.com/meridian-gw/meridian/internal/session"
	"github.com/meridian-gw/meridian/internal/store"
)

// settleConcurrency makes the two process bounds agree: every running turn
// needs a live process, so a lowered --max-live lowers the default
// --max-concurrent with it; only an explicit --max-concurrent above
// --max-live is a contradiction.
func settleConcurrency(maxConcurrent, maxLive int, chosen bool) (int, error) {
	if maxLive >= maxConcurrent {
		return maxConcurrent, nil
	}
	if chosen {
		return 0, fmt.Errorf("--max-live %d is below --max-concurrent %d: every running turn needs a live process; lower --max-concurrent or raise --max-live", maxLive, maxConcurrent)
	}
	return maxLive, nil
}

// runServe runs the gateway until ctx ends.
func runServe(ctx context.Context, cfg *serveConfig, environ []string, logTo io.Writer) error {
	log, err := newLogger(cfg.LogLevel, cfg.LogFormat, logTo)
	if err != nil {
		return err
	}
	if cfg.Port < 0 || cfg.Port > 65535 {
		return fmt.Errorf("--port %d: out of range", cfg.Port)
	}
	if cfg.MaxConcurrent < 1 {
		return fmt.Errorf("--max-concurrent %d: must be at least 1", cfg.MaxConcurrent)
	}
	noLive := cfg.MaxLive == 0
	if noLive {
		cfg.MaxLive = cfg.MaxConcurrent // processes still run during their turns
	}
	concurrent, err := settleConcurrency(cfg.MaxConcurrent, cfg.MaxLive, cfg.MaxConcurrentChosen)
	if err != nil {
		return err
	}
	if concurrent != cfg.MaxConcurrent {
		log.Info("running at most --max-live turns at once: every running turn needs a live process", "max_concurrent", concurrent, "max_live", cfg.MaxLive)
		cfg.MaxConcurrent = concurrent
	}
	addr := net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port))
	// The CLI runs in a workspace of its own, so it never sees the
	// directory meridian happened to be started in.
	workspace := filepath.Join(cfg.DataDir, "workspace")

	if err := httpapi.CheckExposure(addr, cfg.APIKey); err != nil {
		return err
	}
	db, err := store.Open(ctx, filepath.Join(cfg.DataDir, "meridian.db"))
	if err != nil {
		return err
	}
	defer db.Close()

	driver := claude.New(claude.Config{
		Path:     cfg.ClaudePath,
		Env:      environ,
		SelfAddr: addr,
		Logger:   log.With("component", "claude"),
	})
	gw := gateway.New(gateway.Config{
		Backend:       driver,
		Inspector:     driver,
		Workspace:     workspace,
		MaxConcurrent: cfg.MaxConcurrent,
		QueueTimeout:  cfg.QueueTimeout,
		Sessions:      session.NewStore(db, nil),
		Leases:        session.NewLeases(db, 0, log.With("component", "session")),
		TurnWait:      cfg.TurnWait,
		MaxLive:       cfg.MaxLive,
		IdleTTL:       cfg.IdleTTL,
		NoLive:        noLive,
		Logger:        log.With("component", "gateway"),
	})
	defer gw.Close()
	stored, err := responses.Open(ctx, db, responses.Config{MaxCount: cfg.MaxStored, MaxBytes: cfg.MaxStoredBytes})
	if err != nil {
		return err
	}
	key, err := stored.SealKey(ctx)
	if err != nil {
		return err
	}
	sealer, err := openai.NewSealer(key)
	if err != nil {
		return err
	}
	srv, err := httpapi.New(httpapi.Config{
		Responses:    stored,
		Jobs:         responses.NewJobs(cfg.MaxBackground, 0),
		Sealer:       sealer,
		Addr:         addr,
		APIKey:       cfg.APIKey,
		MaxBodyBytes: cfg.MaxBodyBytes,
		Version:      version(),
		Gateway:      gw,
		Logger:       log.With("component", "http"),
	})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(workspace, 0o700); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	ln, err := srv.Listen()
	if err != nil {
		return err
	}
	if path, err := driver.Locate(); err != nil {
		log.Warn("claude CLI not available: requests will fail with 503 until it is", "err", err)
	} else {
		log.Info("using claude CLI", "path", path)
	}
	env := envMap(environ)
	for _, k := range []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"} {
		if env[k] != "" {
			log.Info("the claude CLI will authenticate with "+k+" from this environment, not your claude login", "variable", k)
		}
	}
	log.Info("meridian listening", "addr", ln.Addr().String(), "version", version(), "data_dir", cfg.DataDir,
		"max_concurrent", cfg.MaxConcurrent, "max_live", cfg.MaxLive, "idle_ttl", cfg.IdleTTL, "api_key", cfg.APIKey != "")
	return srv.Serve(ctx, ln)
}
