package httpapi

import (
	"bytes"
	"context"
	"crypto/subtle"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/meridian-gw/meridian/internal/anthropic"
	"github.com/meridian-gw/meridian/internal/dispatch"
	"github.com/meridian-gw/meridian/internal/gateway"
	"github.com/meridian-gw/meridian/internal/telemetry"
)

// Headers between the hosts of a cluster. A forwarded request carries the
// cluster key (never the client's key), the host it came through and the
// client's credential scope, so the host that answers it treats it as the
// client's own.
const (
	headerClusterKey  = "X-Meridian-Cluster-Key"
	headerForwardedBy = "X-Meridian-Forwarded-By"
	headerClientScope = "X-Meridian-Client-Scope"
	// headerForwardedKey names (never holds) the API key a forwarded
	// request came with: the host that forwarded it counted it against
	// the key's limits; the holder keeps to the key's scope.
	headerForwardedKey = "X-Meridian-Forwarded-Key"
	headerServedByHost = "X-Meridian-Host"
)

// peerDialTimeout bounds reaching another host: a host that does not
// answer at once is taken for gone, and this one answers instead.
const peerDialTimeout = 2 * time.Second

// newPeerClient returns the client hosts reach each other with: no
// overall timeout (an answer streams for as long as the model talks), a
// short dial.
func newPeerClient() *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			DialContext:         (&net.Dialer{Timeout: peerDialTimeout, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConnsPerHost: 32,
			IdleConnTimeout:     90 * time.Second,
		},
		// A host answers; it never redirects.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

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
	return s.forward(w, r, raw, t)
}

// forward relays r (its body already read, raw) to t and its answer back,
// streamed as it comes. The client's going away cancels the forwarded
// request, so the host answering stops its turn. False: t could not be
// reached and nothing was written.
func (s *Server) forward(w http.ResponseWriter, r *http.Request, raw []byte, t dispatch.Target) bool {
	out, err := http.NewRequestWithContext(r.Context(), r.Method, t.Addr+r.URL.RequestURI(), bytes.NewReader(raw))
	if err != nil {
		s.log.Warn("cluster: the holder's address makes no request; answering here", "holder", t.Host, "err", err)
		return false
	}
	for k, vs := range r.Header {
		if hopHeader(k) || credentialHeader(k) {
			continue
		}
		out.Header[k] = vs
	}
	out.Header.Set(headerClusterKey, s.cfg.Hosts.Key)
	out.Header.Set(headerForwardedBy, s.cfg.Hosts.Host)
	out.Header.Set(headerClientScope, credentialScope(r))
	out.Header.Del(headerForwardedKey)
	if k := caller(r.Context()); k != nil {
		out.Header.Set(headerForwardedKey, k.Name)
	}
	// The holder is watched by its heartbeat for as long as the forward
	// runs: a host that stopped (a paused VM) accepts the connection and
	// never answers, or stops in the middle of its answer, and must not
	// hold the request.
	ctx, cancel := context.WithCancelCause(r.Context())
	rl := newRelay(w, nil, s.cfg.Listen.PingInterval)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel(nil)
	wg.Go(func() { s.watchHolder(ctx, cancel, t, rl.silent) })
	resp, err := s.peers.Do(out.WithContext(ctx))
	if err != nil {
		if errors.Is(context.Cause(ctx), errHolderGone) {
			s.log.Warn("cluster: the host that holds the conversation stopped beating before it answered; answering here", "holder", t.Host)
			return false
		}
		if r.Context().Err() != nil {
			return true // the client left; nothing to answer
		}
		// Refused, or broken before it answered: the holder is taken
		// for gone, so that what it may have begun (a journaled request)
		// is known as such here at once, not once its heartbeat expires.
		s.cfg.Hosts.Peers.Unreachable(context.WithoutCancel(r.Context()), t.Owner)
		s.log.Warn("cluster: could not reach the host that holds the conversation; answering here", "holder", t.Host, "err", err)
		return false
	}
	defer resp.Body.Close()
	// The host that answers records the request.
	telemetry.From(r.Context()).HandOff()
	for k, vs := range resp.Header {
		if !hopHeader(k) {
			w.Header()[k] = vs
		}
	}
	for k := range resp.Trailer {
		w.Header().Add("Trailer", k)
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		rl.proto = relayProtocolFor(modelAPI(r))
	}
	rl.heard.Store(time.Now().UnixNano())
	w.WriteHeader(resp.StatusCode)
	switch err := rl.copy(resp.Body); {
	case err == nil:
		for k, vs := range resp.Trailer {
			w.Header()[k] = vs
		}
	case errors.Is(err, errClientGone) || r.Context().Err() != nil:
		// The client left: its context ends the forward.
	default:
		s.cfg.Hosts.Peers.Unreachable(context.WithoutCancel(r.Context()), t.Owner)
		s.log.Warn("cluster: the forwarded answer was cut; the client is told", "holder", t.Host, "err", err,
			"holder_gone", errors.Is(context.Cause(ctx), errHolderGone))
		rl.cut(relayCutError(t.Host, r.Header.Get(headerIdempotency) != "" || r.Header.Get(headerRequestID) != ""))
	}
	return true
}

// errHolderGone ends a forward whose holder's heartbeat expired while it
// had no answer under way, or stopped sending one.
var errHolderGone = errors.New("httpapi: the holder's heartbeat expired")

// holderCheck is how often a forward looks at its holder's heartbeat.
const holderCheck = time.Second

// watchHolder cancels the forward to t with errHolderGone once t's
// heartbeat has expired: before its answer began, at once; after, once
// the holder has also been silent for longer than a ping interval (a
// holder pings its quiet streams), so that a holder still streaming while
// it cannot reach the store is not cut.
func (s *Server) watchHolder(ctx context.Context, cancel context.CancelCauseFunc, t dispatch.Target, silent func(time.Time) time.Duration) {
	tick := time.NewTicker(holderCheck)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if quiet := silent(time.Now()); quiet > 0 && quiet < s.cfg.Listen.PingInterval {
			continue
		}
		if _, alive, err := s.cfg.Hosts.Peers.Host(ctx, t.Owner); err == nil && !alive {
			cancel(errHolderGone)
			return
		}
	}
}

// hopHeader names headers of one connection, never relayed.
func hopHeader(k string) bool {
	switch http.CanonicalHeaderKey(k) {
	case "Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate", "Proxy-Authorization",
		"Te", "Trailer", "Transfer-Encoding", "Upgrade":
		return true
	}
	return false
}

// credentialHeader names what carries a client's secret: it stays on the
// host the client reached. The cluster's own headers are set anew.
func credentialHeader(k string) bool {
	switch http.CanonicalHeaderKey(k) {
	case "X-Api-Key", "Authorization", "Cookie", headerClusterKey, headerForwardedBy, headerClientScope:
		return true
	}
	return false
}
