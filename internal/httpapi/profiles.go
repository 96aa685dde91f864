package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/meridian-gw/meridian/internal/anthropic"
	"github.com/meridian-gw/meridian/internal/gateway"
)

// Profile is a named profile's gateway.
type Profile struct {
	Name    string
	Gateway *gateway.Gateway
	// Fallback: failover may move requests of other profiles here. The
	// environment's implicit profile may have no login of its own, so it
	// answers only requests that chose it.
	Fallback bool
}

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
		for _, p := range s.cfg.Profiles {
			if p.Name == name {
				w.Header().Set(headerProfile, name)
				next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), profileKey{}, p.Gateway)))
				return
			}
		}
		names := make([]string, len(s.cfg.Profiles))
		for i, p := range s.cfg.Profiles {
			names[i] = p.Name
		}
		writeError(w, r, &gateway.Error{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: headerProfile,
			Message: fmt.Sprintf("unknown profile %q in %s; the profiles are: %s", name, headerProfile, strings.Join(names, ", "))})
	})
}

// gwFor is the gateway of the request's profile.
func (s *Server) gwFor(ctx context.Context) *gateway.Gateway {
	if gw, ok := ctx.Value(profileKey{}).(*gateway.Gateway); ok {
		return gw
	}
	return s.gw
}

// gateways lists every profile's gateway once, the default first when
// there are no named profiles.
func (s *Server) gateways() []*gateway.Gateway {
	if len(s.cfg.Profiles) == 0 {
		return []*gateway.Gateway{s.gw}
	}
	out := make([]*gateway.Gateway, len(s.cfg.Profiles))
	for i, p := range s.cfg.Profiles {
		out[i] = p.Gateway
	}
	return out
}

// load sums the claude processes of every profile, their memory measured
// now.
func (s *Server) load() gateway.BackendLoad { return gateway.SumLoad(s.gateways()) }

// providers reports every profile.
func (s *Server) providers(ctx context.Context) []gateway.Provider {
	var out []gateway.Provider
	for _, gw := range append(s.gateways(), s.cfg.AlsoShown...) {
		out = append(out, gw.Providers(ctx)...)
	}
	return out
}

// answer runs a model request on its profile: the one it names, else the
// one that last served its conversation, else the default. With failover, a refusal
// for a rate limit or overload before anything reached the client benches
// that profile until its wait has passed and the request goes to the next
// profile by priority that is not benched; when all are benched the client
// gets 429 with the earliest reopening as its wait.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, req gateway.Request, id string, out gateway.Output) error {
	ctx := r.Context()
	chosen := s.gwFor(ctx)
	if _, named := ctx.Value(profileKey{}).(*gateway.Gateway); !named && len(s.cfg.Profiles) > 1 {
		// A conversation stays with the profile that served it last (after
		// a failover, the one it moved to), whatever the default.
		if last, err := chosen.ServedBy(ctx, req); err != nil {
			s.log.Warn("could not look up the conversation's profile; the default serves it", "err", err)
		} else if gw, ok := s.byName[last]; ok {
			chosen = gw
		}
	}
	w.Header().Set(headerProfile, chosen.Profile())
	if !s.cfg.Failover || len(s.cfg.Profiles) < 2 {
		return chosen.Messages(ctx, req, id, out)
	}
	st, retryable := out.(gateway.Committer)
	order, reopen := s.bench.Order(chosen.Profile(), s.fallbacks, time.Now())
	for _, name := range order {
		w.Header().Set(headerProfile, name)
		err := s.byName[name].Messages(ctx, req, id, out)
		var ge *gateway.Error
		if !errors.As(err, &ge) || (ge.Status != http.StatusTooManyRequests && ge.Status != anthropic.StatusOverloaded) ||
			!retryable || st.Committed() || ctx.Err() != nil {
			return err
		}
		until := s.bench.Put(name, time.Now(), ge.RetryAfter)
		s.log.Warn("profile refused the request for its rate limit: benched, trying the next profile",
			"profile", name, "status", ge.Status, "benched_until", until)
		if reopen.IsZero() || until.Before(reopen) {
			reopen = until
		}
	}
	wait := time.Until(reopen)
	return &gateway.Error{Status: http.StatusTooManyRequests, Type: anthropic.ErrRateLimit, RetryAfter: wait,
		Message: fmt.Sprintf("every profile is rate-limited; the first reopens in %s", wait.Round(time.Second))}
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
	cli := s.gw.CLI()
	writeJSON(w, http.StatusOK, map[string]any{"profiles": out, "as_of": time.Now().UTC(),
		"sources": map[string]string{"windows": cli.WindowSource, "plan": cli.PlanSource}})
}
