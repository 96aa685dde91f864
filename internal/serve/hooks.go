package serve

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/meridian-gw/meridian/internal/config"
	"github.com/meridian-gw/meridian/internal/hooks"
)

// openHooks makes the settings file's request hooks ready: commands
// found, modules compiled (kept compiled under the data dir). A hook that
// cannot run stops meridian at its start, rather than failing every
// request later.
func openHooks(ctx context.Context, settings []config.Hook, dataDir string, environ []string, log *slog.Logger) (*hooks.Hooks, error) {
	specs := make([]hooks.Spec, 0, len(settings))
	for i, c := range settings {
		var timeout time.Duration
		if c.Timeout != "" {
			d, err := time.ParseDuration(c.Timeout)
			if err != nil {
				return nil, fmt.Errorf("settings file, hooks[%d] (%s): timeout: %w", i, c.Name, err)
			}
			timeout = d
		}
		specs = append(specs, hooks.Spec{Name: c.Name, Stage: c.Stage, Mode: c.Mode, Command: c.Command, Wasm: c.Wasm, Args: c.Args,
			Env: c.Env, APIs: c.APIs, Timeout: timeout, MaxBytes: c.MaxBytes, Concurrent: c.Concurrent, MemoryMiB: c.MemoryMiB})
	}
	h, err := hooks.Open(ctx, hooks.Config{Specs: specs, CacheDir: filepath.Join(dataDir, "hooks-cache"), Environ: environ, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("settings file: %w", err)
	}
	for _, s := range specs {
		log.Info("request hook ready", "hook", s.Name, "stage", s.Stage, "mode", s.Mode, "wasm", s.Wasm != "")
	}
	return h, nil
}
