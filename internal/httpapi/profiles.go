package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/meridian-gw/meridian/internal/gateway"
)

// Profile is a named profile's gateway.
type Profile struct {
	Name    string
	Gateway *gateway.Gateway
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
	for _, gw := range s.gateways() {
		out = append(out, gw.Providers(ctx)...)
	}
	return out
}
