// Package forward sends a model request to the host of the cluster that
// holds its conversation and relays that host's answer back: the client
// hosts reach each other with, the headers between them (the cluster's
// key, never the client's), a watch on the holder's heartbeat, pings
// while it is quiet, and a cut answer ended with the API's own error
// rather than left to pass for whole.
package forward

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/meridian-gw/meridian/internal/dispatch"
	"github.com/meridian-gw/meridian/internal/telemetry"
	"github.com/meridian-gw/meridian/internal/tracing"
)

// Headers between the hosts of a cluster. A forwarded request carries the
// cluster key (never the client's key), the host it came through and the
// client's credential scope, so the host that answers it treats it as the
// client's own.
const (
	HeaderClusterKey  = "X-Meridian-Cluster-Key"
	HeaderForwardedBy = "X-Meridian-Forwarded-By"
	HeaderClientScope = "X-Meridian-Client-Scope"
	// HeaderForwardedKey names (never holds) the API key a forwarded
	// request came with: the host that forwarded it counted it against
	// the key's limits; the holder keeps to the key's scope.
	HeaderForwardedKey = "X-Meridian-Forwarded-Key"
	HeaderServedByHost = "X-Meridian-Host"
)

// Forwarder sends requests to the other hosts of its cluster.
type Forwarder struct {
	// Key is the cluster's key, Host this host's id.
	Key, Host string
	// Peers tells whether a host still beats, and hears of one that
	// could not be reached.
	Peers dispatch.Hosts
	// Ping is the client's ping interval while the holder is quiet.
	Ping time.Duration
	// Stall is how long a holder that still beats may send nothing at
	// all once its answer began (it pings a quiet stream every Ping)
	// before the forward is cut as stalled (0: DefaultStall).
	Stall  time.Duration
	Log    *slog.Logger
	client *http.Client
}

// DefaultStall is Forwarder.Stall's default.
const DefaultStall = 60 * time.Second

// New returns a Forwarder with its own client.
func New(key, host string, peers dispatch.Hosts, ping time.Duration, log *slog.Logger) *Forwarder {
	return &Forwarder{Key: key, Host: host, Peers: peers, Ping: ping, Log: log, client: newPeerClient()}
}

// Call is what a forward needs to know of the request beyond its bytes.
type Call struct {
	// Scope is the client's credential scope; KeyName the API key it came
	// with ("" for none).
	Scope, KeyName string
	// API is the model API (telemetry.APIMessages, …), whose stream a cut
	// ends with its own error.
	API string
	// Named: the request carries an explicit id, which is not run a
	// second time after a cut.
	Named bool
}

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

// Forward relays r (its body already read, raw) to t and its answer back,
// streamed as it comes. The client's going away cancels the forwarded
// request, so the host answering stops its turn. False: t could not be
// reached and nothing was written.
func (s *Forwarder) Forward(w http.ResponseWriter, r *http.Request, raw []byte, t dispatch.Target, c Call) bool {
	// The hop is a span of this request's trace, and the holder's server
	// span its child.
	sctx, span := tracing.Start(r.Context(), "forward", tracing.Client, tracing.Attr("meridian.holder", t.Host),
		tracing.Attr("server.address", t.Addr))
	defer span.End()
	r = r.WithContext(sctx)
	out, err := http.NewRequestWithContext(r.Context(), r.Method, t.Addr+r.URL.RequestURI(), bytes.NewReader(raw))
	if err != nil {
		s.Log.Warn("cluster: the holder's address makes no request; answering here", "holder", t.Host, "err", err)
		return false
	}
	for k, vs := range r.Header {
		if hopHeader(k) || credentialHeader(k) {
			continue
		}
		out.Header[k] = vs
	}
	out.Header.Set(HeaderClusterKey, s.Key)
	out.Header.Set(HeaderForwardedBy, s.Host)
	out.Header.Set(HeaderClientScope, c.Scope)
	out.Header.Del(HeaderForwardedKey)
	if c.KeyName != "" {
		out.Header.Set(HeaderForwardedKey, c.KeyName)
	}
	tracing.Inject(r.Context(), out.Header)
	// The holder is watched by its heartbeat for as long as the forward
	// runs: a host that stopped (a paused VM) accepts the connection and
	// never answers, or stops in the middle of its answer, and must not
	// hold the request.
	ctx, cancel := context.WithCancelCause(r.Context())
	rl := newRelay(w, nil, s.Ping)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel(nil)
	wg.Go(func() { s.watchHolder(ctx, cancel, t, rl.silent) })
	resp, err := s.client.Do(out.WithContext(ctx))
	if err != nil {
		if errors.Is(context.Cause(ctx), errHolderGone) {
			s.Log.Warn("cluster: the host that holds the conversation stopped beating before it answered; answering here", "holder", t.Host)
			return false
		}
		if r.Context().Err() != nil {
			return true // the client left; nothing to answer
		}
		// Refused, or broken before it answered: the holder is taken
		// for gone, so that what it may have begun (a journaled request)
		// is known as such here at once, not once its heartbeat expires.
		s.Peers.Unreachable(context.WithoutCancel(r.Context()), t.Owner)
		s.Log.Warn("cluster: could not reach the host that holds the conversation; answering here", "holder", t.Host, "err", err)
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
		rl.proto = relayProtocolFor(c.API)
	}
	rl.heard.Store(time.Now().UnixNano())
	tracing.Status(span, resp.StatusCode)
	w.WriteHeader(resp.StatusCode)
	switch err := rl.copy(resp.Body); {
	case err == nil:
		for k, vs := range resp.Trailer {
			w.Header()[k] = vs
		}
	case errors.Is(err, errClientGone) || r.Context().Err() != nil:
		// The client left: its context ends the forward.
	case errors.Is(context.Cause(ctx), errHolderStalled):
		// It beats but does not answer: stuck, not gone. Its own error,
		// so the client and the log can tell the two apart.
		s.Log.Warn("cluster: the host answering stalled in the middle of its answer; the client is told", "holder", t.Host,
			"silent_for", cmp.Or(s.Stall, DefaultStall))
		rl.cut(StallError(t.Host, cmp.Or(s.Stall, DefaultStall), c.Named))
	default:
		s.Peers.Unreachable(context.WithoutCancel(r.Context()), t.Owner)
		s.Log.Warn("cluster: the forwarded answer was cut; the client is told", "holder", t.Host, "err", err,
			"holder_gone", errors.Is(context.Cause(ctx), errHolderGone))
		rl.cut(CutError(t.Host, c.Named))
	}
	return true
}

// errHolderGone ends a forward whose holder's heartbeat expired while it
// had no answer under way, or stopped sending one; errHolderStalled one
// whose holder still beats but sent nothing, not even a ping, for Stall.
var (
	errHolderGone    = errors.New("forward: the holder's heartbeat expired")
	errHolderStalled = errors.New("forward: the holder stalled")
)

// holderCheck is how often a forward looks at its holder's heartbeat.
const holderCheck = time.Second

// watchHolder cancels the forward to t with errHolderGone once t's
// heartbeat has expired: before its answer began, at once; after, once
// the holder has also been silent for longer than a ping interval (a
// holder pings its quiet streams), so that a holder still streaming while
// it cannot reach the store is not cut.
func (s *Forwarder) watchHolder(ctx context.Context, cancel context.CancelCauseFunc, t dispatch.Target, silent func(time.Time) time.Duration) {
	tick := time.NewTicker(holderCheck)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		quiet := silent(time.Now())
		if stall := cmp.Or(s.Stall, DefaultStall); quiet >= stall {
			cancel(errHolderStalled)
			return
		}
		if quiet > 0 && quiet < s.Ping {
			continue
		}
		if _, alive, err := s.Peers.Host(ctx, t.Owner); err == nil && !alive {
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
	case "X-Api-Key", "Authorization", "Cookie", HeaderClusterKey, HeaderForwardedBy, HeaderClientScope:
		return true
	}
	return false
}
