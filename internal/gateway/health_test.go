package gateway

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/meridian-gw/meridian/internal/backend"
)

// slowInspector answers `auth status` only after a delay.
type slowInspector struct {
	authDelay time.Duration
	calls     atomic.Int32
}

func (s *slowInspector) Locate() (string, error)                         { return "claude", nil }
func (s *slowInspector) Version(context.Context) (string, error)         { return "2.1.332", nil }
func (s *slowInspector) Models(context.Context) ([]backend.Model, error) { return nil, nil }
func (s *slowInspector) Auth(ctx context.Context) (backend.Auth, error) {
	s.calls.Add(1)
	select {
	case <-time.After(s.authDelay):
		return backend.Auth{LoggedIn: true, Method: "api_key"}, nil
	case <-ctx.Done():
		return backend.Auth{}, ctx.Err()
	}
}

// A probe slower than a caller's patience is not killed with it: the
// caller hears "degraded" after 5 s, the probe finishes on its own and the
// next caller is served from it at once.
func TestHealthProbeOutlivesAnImpatientCaller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		in := &slowInspector{authDelay: 20 * time.Second}
		g := New(Config{Inspector: in})
		defer g.Close()
		start := time.Now()
		h := g.Health(context.Background())
		if h.Status != "degraded" || time.Since(start) != healthPatience {
			t.Fatalf("first check after %v: %+v", time.Since(start), h)
		}
		time.Sleep(20 * time.Second)
		synctest.Wait()
		start = time.Now()
		h = g.Health(context.Background())
		if h.Status != "ok" || h.Claude.Auth == nil || !h.Claude.Auth.LoggedIn || time.Since(start) != 0 {
			t.Fatalf("second check: %+v after %v", h, time.Since(start))
		}
		if n := in.calls.Load(); n != 1 {
			t.Fatalf("auth status ran %d times, want once", n)
		}
	})
}

// Closing the gateway ends a probe still running rather than waiting out
// its deadline.
func TestCloseEndsProbes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := New(Config{Inspector: &slowInspector{authDelay: time.Hour}})
		g.Health(context.Background())
		start := time.Now()
		g.Close()
		if time.Since(start) != 0 {
			t.Fatalf("Close waited %v for a probe", time.Since(start))
		}
	})
}
