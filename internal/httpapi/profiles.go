package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/meridian-gw/meridian/internal/dispatch"
	"github.com/meridian-gw/meridian/internal/gateway"
	"github.com/meridian-gw/meridian/internal/telemetry"
)

// Profile is a named profile's gateway.
type Profile = dispatch.Profile

// headerProfile chooses a request's profile; responses name the one that
// answered, and headerRouteReason why it was chosen.
const (
	headerProfile     = "X-Meridian-Profile"
	headerRouteReason = "X-Meridian-Route-Reason"
)

type profileKey struct{}

// backends are the gateways this server answers with: every profile's,
// through dispatch, and those of the other backends mounted on its
// listener.
type backends struct {
	dispatch *dispatch.Dispatcher
	mounted  []*gateway.Gateway
}

// mountedGateways are the gateways of the mounts that have one.
func mountedGateways(mounts []Mount) []*gateway.Gateway {
	var out []*gateway.Gateway
	for _, m := range mounts {
		if m.Gateway != nil {
			out = append(out, m.Gateway)
		}
	}
	return out
}

// chooseProfile resolves X-Meridian-Profile: a known name picks that
// profile's gateway for the request, an unknown one is refused with the
// names there are, and none means the default.
func (b *backends) chooseProfile(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimSpace(r.Header.Get(headerProfile))
		if name == "" {
			next.ServeHTTP(w, r)
			return
		}
		if gw, ok := b.dispatch.Lookup(name); ok {
			w.Header().Set(headerProfile, name)
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), profileKey{}, gw)))
			return
		}
		writeError(w, r, &gateway.Error{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: headerProfile,
			Message: fmt.Sprintf("unknown profile %q in %s; the profiles are: %s", name, headerProfile, strings.Join(b.dispatch.Names(), ", "))})
	})
}

// of is the gateway of the request's profile.
func (b *backends) of(ctx context.Context) *gateway.Gateway {
	if gw := named(ctx); gw != nil {
		return gw
	}
	return b.dispatch.Default()
}

// named is the gateway of the profile the request named, nil for none.
func named(ctx context.Context) *gateway.Gateway {
	gw, _ := ctx.Value(profileKey{}).(*gateway.Gateway)
	return gw
}

// profiles lists every profile's gateway once, the default first when
// there are no named profiles.
func (b *backends) profiles() []*gateway.Gateway { return b.dispatch.Gateways() }

// all are every profile's gateway and every mounted one.
func (b *backends) all() []*gateway.Gateway { return append(b.profiles(), b.mounted...) }

// Load is what every backend runs now, summed.
func (s *Server) Load() gateway.BackendLoad { return s.backends.load() }

// Counts sums the live processes and running turns of every profile and
// mounted backend without measuring their memory: the heartbeat asks
// every few seconds, and a measure reads /proc for each process.
func (s *Server) Counts() (live, running int) {
	for _, gw := range s.backends.all() {
		for _, b := range gw.Inflight().Backends {
			live, running = live+b.Live, running+b.Running
		}
	}
	return live, running
}

// load sums the CLI processes of every profile and mounted backend, their
// memory measured now.
func (b *backends) load() gateway.BackendLoad { return gateway.SumLoad(b.all()) }

// label names the processes load counts: by their CLI when one kind
// runs, as CLI processes when several do.
func (b *backends) label() string {
	if len(b.mounted) > 0 {
		return "CLI processes"
	}
	return b.dispatch.Default().CLI().Name + " processes"
}

// providers reports every profile.
func (b *backends) providers(ctx context.Context) []gateway.Provider {
	var out []gateway.Provider
	for _, gw := range b.all() {
		out = append(out, gw.Providers(ctx)...)
	}
	return out
}

// answer runs a model request through dispatch, which chooses its profile
// (and, with failover, the next one); the response and its telemetry
// record name each profile that answers and why.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, req gateway.Request, id string, out gateway.Output) error {
	answering := func(p, reason string) {
		w.Header().Set(headerProfile, p)
		w.Header().Set(headerRouteReason, reason)
		telemetry.From(r.Context()).Routed(reason)
	}
	return s.dispatch.Answer(r.Context(), dispatch.Call{Request: req, ID: id, Named: named(r.Context()),
		Allowed: allowedProfile(r.Context()), Answering: answering}, out)
}

// unbench is POST /v1/profiles/{name}/unbench (admin): the profile is open
// again now, on every host within a second, and its plan figures are read
// again from its next turn.
func (b *backends) unbench(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if _, ok := b.dispatch.Lookup(name); !ok {
		writeError(w, r, &gateway.Error{Status: http.StatusNotFound, Type: "not_found_error",
			Message: fmt.Sprintf("unknown profile %q; the profiles are: %s", name, strings.Join(b.dispatch.Names(), ", "))})
		return
	}
	if err := b.dispatch.Unbench(r.Context(), name); err != nil {
		writeError(w, r, gateway.StoreUnavailable("reopen the profile"))
		return
	}
	_ = writeJSON(w, http.StatusOK, map[string]string{"unbenched": name})
}

// check is POST /v1/profiles/{name}/check (admin): the profile's login and
// its plan figures as the CLI reads them now (its /usage), the figures
// shared with every host.
func (b *backends) check(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	gw, ok := b.dispatch.Lookup(name)
	if !ok {
		writeError(w, r, &gateway.Error{Status: http.StatusNotFound, Type: "not_found_error",
			Message: fmt.Sprintf("unknown profile %q; the profiles are: %s", name, strings.Join(b.dispatch.Names(), ", "))})
		return
	}
	providers := gw.Providers(r.Context())
	reading := gw.Plan(r.Context())
	if err := b.dispatch.Share(r.Context(), name, reading.RateWindows()); err != nil {
		writeError(w, r, gateway.StoreUnavailable("share the profile's plan figures"))
		return
	}
	out := map[string]any{"profile": name, "plan": reading}
	if len(providers) > 0 {
		out["status"], out["auth"], out["rate_limits"] = providers[0].Status, providers[0].Auth, providers[0].RateLimits
	}
	_ = writeJSON(w, http.StatusOK, out)
}
