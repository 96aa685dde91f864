package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/meridian-gw/meridian/internal/dispatch"
	"github.com/meridian-gw/meridian/internal/gateway"
)

// Profile is a named profile's gateway.
type Profile = dispatch.Profile

// headerProfile chooses a request's profile; responses name the one that
// answered.
const headerProfile = "X-Meridian-Profile"

type profileKey struct{}

// chooseProfile resolves X-Meridian-Profile: a known name picks that
// profile's gateway for the request, an unknown one is refused with the
// names there are, and none means the default.
func (s *Server) chooseProfile(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimSpace(r.Header.Get(headerProfile))
		if name == "" {
			next.ServeHTTP(w, r)
			return
		}
		if gw, ok := s.dispatch.Lookup(name); ok {
			w.Header().Set(headerProfile, name)
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), profileKey{}, gw)))
			return
		}
		writeError(w, r, &gateway.Error{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: headerProfile,
			Message: fmt.Sprintf("unknown profile %q in %s; the profiles are: %s", name, headerProfile, strings.Join(s.dispatch.Names(), ", "))})
	})
}

// gwFor is the gateway of the request's profile.
func (s *Server) gwFor(ctx context.Context) *gateway.Gateway {
	if gw := named(ctx); gw != nil {
		return gw
	}
	return s.dispatch.Default()
}

// named is the gateway of the profile the request named, nil for none.
func named(ctx context.Context) *gateway.Gateway {
	gw, _ := ctx.Value(profileKey{}).(*gateway.Gateway)
	return gw
}

// gateways lists every profile's gateway once, the default first when
// there are no named profiles.
func (s *Server) gateways() []*gateway.Gateway { return s.dispatch.Gateways() }

// mounted are the gateways of the other backends mounted on this listener.
func (s *Server) mounted() []*gateway.Gateway {
	var out []*gateway.Gateway
	for _, m := range s.cfg.Mounts {
		if m.Gateway != nil {
			out = append(out, m.Gateway)
		}
	}
	return out
}

// Load is what every backend runs now, summed.
func (s *Server) Load() gateway.BackendLoad { return s.load() }

// Counts sums the live processes and running turns of every profile and
// mounted backend without measuring their memory: the heartbeat asks
// every few seconds, and a measure reads /proc for each process.
func (s *Server) Counts() (live, running int) {
	for _, gw := range append(s.gateways(), s.mounted()...) {
		for _, b := range gw.Inflight().Backends {
			live, running = live+b.Live, running+b.Running
		}
	}
	return live, running
}

// load sums the CLI processes of every profile and mounted backend, their
// memory measured now.
func (s *Server) load() gateway.BackendLoad {
	return gateway.SumLoad(append(s.gateways(), s.mounted()...))
}

// processesLabel names the processes load counts: by their CLI when one
// kind runs, as CLI processes when several do.
func (s *Server) processesLabel() string {
	if len(s.mounted()) > 0 {
		return "CLI processes"
	}
	return s.dispatch.Default().CLI().Name + " processes"
}

// providers reports every profile.
func (s *Server) providers(ctx context.Context) []gateway.Provider {
	var out []gateway.Provider
	for _, gw := range append(s.gateways(), s.mounted()...) {
		out = append(out, gw.Providers(ctx)...)
	}
	return out
}

// answer runs a model request through dispatch, which chooses its profile
// (and, with failover, the next one); the response names each profile
// that answers.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, req gateway.Request, id string, out gateway.Output) error {
	return s.dispatch.Answer(r.Context(), dispatch.Call{Request: req, ID: id, Named: named(r.Context()),
		Allowed: allowedProfile(r.Context()), Answering: func(p string) { w.Header().Set(headerProfile, p) }}, out)
}

// profileQuota is one profile's part of GET /v1/usage/quota.
type profileQuota struct {
	Profile string               `json:"profile"`
	Windows []gateway.RateWindow `json:"windows"`
	Plan    *gateway.PlanReading `json:"plan"`
}

// quota serves GET /v1/usage/quota, per profile (or the one the request
// names): the rate-limit windows the CLI reported on its latest turns
// (rate_limit_event, with when each was seen), and the plan's limits as
// the CLI's /usage reads them (a probe per profile, one at a time, trusted
// for a minute; when it fails the last good reading is served with
// "stale": true). Profiles are read side by side.
func (s *Server) quota(w http.ResponseWriter, r *http.Request) {
	gws := s.gateways()
	if gw, ok := r.Context().Value(profileKey{}).(*gateway.Gateway); ok {
		gws = []*gateway.Gateway{gw}
	}
	out := make([]profileQuota, len(gws))
	var wg sync.WaitGroup
	for i, gw := range gws {
		wg.Go(func() {
			out[i] = profileQuota{Profile: gw.Profile(), Windows: gw.RateWindows(), Plan: gw.Plan(r.Context())}
		})
	}
	wg.Wait()
	cli := s.dispatch.Default().CLI()
	writeJSON(w, http.StatusOK, map[string]any{"profiles": out, "as_of": time.Now().UTC(),
		"sources": map[string]string{"windows": cli.WindowSource, "plan": cli.PlanSource}})
}
