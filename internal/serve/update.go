package serve

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/meridian-gw/meridian/internal/updatecheck"
)

// newerRelease asks once, in the background, whether a newer release than
// this one is out, for the landing page — only where the update check may
// ask (a person at the terminal meridian started in, never in CI, not
// when turned off). It returns what to show ("" for nothing known) and
// how to wait for the question to end.
func newerRelease(ctx context.Context, cfg Config, environ []string, log *slog.Logger) (func() string, func()) {
	env := envMap(environ)
	getenv := func(k string) string { return env[k] }
	var found atomic.Pointer[string]
	show := func() string {
		if p := found.Load(); p != nil {
			return *p
		}
		return ""
	}
	var wg sync.WaitGroup
	if updatecheck.Enabled(getenv, false, cfg.Welcome) {
		wg.Go(func() {
			c := &updatecheck.Checker{URL: getenv(updatecheck.EnvURL), Cache: updatecheck.CacheFile(getenv)}
			latest, err := c.Latest(ctx)
			if err != nil {
				log.Debug("the update check found nothing", "err", err)
				return
			}
			current, _, _ := strings.Cut(cfg.Version, " ")
			if updatecheck.Newer(current, latest) {
				found.Store(&latest)
				log.Info("a newer release is out", "latest", latest)
			}
		})
	}
	return show, wg.Wait
}
