package httpapi

import (
	"context"
	"crypto/subtle"
	"net/http"
	"time"

	"github.com/meridian-gw/meridian/internal/anthropic"
	"github.com/meridian-gw/meridian/internal/dispatch"
	"github.com/meridian-gw/meridian/internal/forward"
	"github.com/meridian-gw/meridian/internal/gateway"
	"github.com/meridian-gw/meridian/internal/telemetry"
)

// The headers between hosts, as forward names them.
const (
	headerClusterKey   = forward.HeaderClusterKey
	headerForwardedBy  = forward.HeaderForwardedBy
	headerClientScope  = forward.HeaderClientScope
	headerForwardedKey = forward.HeaderForwardedKey
	headerServedByHost = forward.HeaderServedByHost
)

// forwardedKey marks a request another host forwarded: its client's scope.
type forwardedKey struct{}

// forwarded returns the client scope of a request another host forwarded.
func forwarded(ctx context.Context) (scope string, ok bool) {
	scope, ok = ctx.Value(forwardedKey{}).(string)
	return scope, ok
}

// admitPeer checks a request that says it comes from another host: it
// must carry this cluster's key. It reports whether the request goes on,
// with its context marked; a refused one is answered.
func (s *Server) admitPeer(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	key := r.Header.Get(headerClusterKey)
	switch {
	case key == "" || s.cfg.Hosts.Key == "":
		writeError(w, r, &gateway.Error{Status: http.StatusUnauthorized, Type: anthropic.ErrAuthentication,
			Message: "a request forwarded by another host needs this cluster's key"})
		return r, false
	case !sameSecret(key, s.cfg.Hosts.Key):
		writeError(w, r, &gateway.Error{Status: http.StatusForbidden, Type: anthropic.ErrPermission,
			Message: "the cluster key of the forwarded request is not this cluster's"})
		return r, false
	}
	scope := r.Header.Get(headerClientScope)
	if scope == "" {
		scope = "local"
	}
	ctx := context.WithValue(r.Context(), forwardedKey{}, scope)
	if name := r.Header.Get(headerForwardedKey); name != "" && s.access.keys != nil {
		k, ok, err := s.access.keys.Named(ctx, name, time.Now())
		if err != nil || !ok {
			writeError(w, r, gateway.Unavailable("could not find the API key the forwarded request came with; send it again"))
			return r, false
		}
		ctx = withCaller(ctx, k, true)
		telemetry.From(ctx).Keyed(k.Name)
	}
	return r.WithContext(ctx), true
}

// sameSecret compares two secrets by their digests, in constant time.
func sameSecret(a, b string) bool {
	da, db := digest(a), digest(b)
	return subtle.ConstantTimeCompare(da[:], db[:]) == 1
}

// isPeerRequest reports whether r says another host sent it.
func isPeerRequest(r *http.Request) bool {
	return r.Header.Get(headerClusterKey) != "" || r.Header.Get(headerForwardedBy) != ""
}

// routed sends a model request to the host that holds its conversation,
// when that is another one, and answers the client with what that host
// answers. It reports false when this host is to answer: no cluster key,
// a request already forwarded once (never a second hop), a conversation
// held here or by nobody alive, or a holder that cannot be reached.
func (s *Server) routed(w http.ResponseWriter, r *http.Request, raw []byte, req gateway.Request) bool {
	if s.cfg.Hosts.Key == "" {
		return false
	}
	if _, ok := forwarded(r.Context()); ok {
		return false
	}
	t, ok := s.dispatch.Route(r.Context(), dispatch.Call{Request: req, Named: named(r.Context()), Allowed: allowedProfile(r.Context())})
	if !ok {
		return false
	}
	c := forward.Call{Scope: credentialScope(r), API: modelAPI(r),
		Named: r.Header.Get(headerIdempotency) != "" || r.Header.Get(headerRequestID) != ""}
	if k := caller(r.Context()); k != nil {
		c.KeyName = k.Name
	}
	return s.forwarder.Forward(w, r, raw, t, c)
}
