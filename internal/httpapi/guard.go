package httpapi

import (
	"crypto/sha256"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/meridian-gw/meridian/internal/anthropic"
	"github.com/meridian-gw/meridian/internal/gateway"
)

// guard refuses what must not reach a handler: browser pages of other
// origins (a local gateway is otherwise open to any website the user
// visits), DNS-rebound host names when listening on loopback, and
// requests without a key where one is needed (authenticate).
func (s *Server) guard(next http.Handler) http.Handler {
	loopback := isLoopbackAddr(s.cfg.Listen.Addr)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.allowedSource(w, r, loopback) {
			return
		}
		if isPeerRequest(r) {
			// Another host forwarded it: the cluster key stands in for the
			// client's, which that host checked.
			var ok bool
			if r, ok = s.admitPeer(w, r); ok {
				next.ServeHTTP(w, r)
			}
			return
		}
		if needsKey(r) && (s.access.hasAdmin || s.access.keys != nil) {
			var ok bool
			if r, ok = s.access.authenticate(w, r); !ok {
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// allowedSource refuses DNS-rebound host names on a loopback listener and
// pages of other origins, answering the request; it reports whether the
// request may go on.
func (s *Server) allowedSource(w http.ResponseWriter, r *http.Request, loopback bool) bool {
	if loopback && r.Host != "" && !isLoopbackHost(hostOnly(r.Host)) && !s.allowedHost(hostOnly(r.Host)) {
		writeError(w, r, &gateway.Error{Status: http.StatusForbidden, Type: anthropic.ErrPermission,
			Message: fmt.Sprintf("host %q is not this machine: Meridian listens on loopback and answers only loopback host names and those --allowed-hosts names", r.Host)})
		return false
	}
	if origin := r.Header.Get("Origin"); origin != "" && !loopbackOrigin(origin) && !s.allowedOrigin(origin) {
		writeError(w, r, &gateway.Error{Status: http.StatusForbidden, Type: anthropic.ErrPermission,
			Message: fmt.Sprintf("requests from web pages of other origins (%s) are refused; --allowed-hosts names the hosts whose pages may call", origin)})
		return false
	}
	return true
}

// allowedHost reports a host name the operator allowed (--allowed-hosts).
func (s *Server) allowedHost(host string) bool {
	for _, h := range s.cfg.Listen.AllowedHosts {
		if strings.EqualFold(strings.TrimSuffix(h, "."), strings.TrimSuffix(host, ".")) {
			return true
		}
	}
	return false
}

// allowedOrigin reports a page's origin on an allowed host.
func (s *Server) allowedOrigin(origin string) bool {
	u, err := url.Parse(origin)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && s.allowedHost(u.Hostname())
}

// localOnly lets through, to a handler that checks its own callers, only
// what comes from this machine (loopback, or the very address it reached):
// agy runs beside meridian, so a request from elsewhere is never agy's,
// whatever address meridian listens on.
func (s *Server) localOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		remote, _, _ := net.SplitHostPort(r.RemoteAddr)
		ip := net.ParseIP(remote)
		local := ""
		if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
			local, _, _ = net.SplitHostPort(a.String())
		}
		if ip == nil || !(ip.IsLoopback() || ip.Equal(net.ParseIP(local))) {
			http.NotFound(w, r)
			return
		}
		if s.allowedSource(w, r, ip.IsLoopback()) {
			next.ServeHTTP(w, r)
		}
	})
}

// needsKey: everything but the probes a client or a supervisor makes
// before it has a key (the root's JSON and /health) and the stylesheet.
// The model routes answer without the /v1 prefix too, so a list of
// protected prefixes would miss some. The root's page for a browser shows
// what runs, so it needs the key too.
func needsKey(r *http.Request) bool {
	switch p := r.URL.Path; {
	case p == "/":
		return wantsHTML(r)
	case p == "/health", p == "/ready", p == "/sign-in", strings.HasPrefix(p, "/static/"):
		return false
	}
	return true
}

// presentedKey is the API key a request carries, as x-api-key or a bearer
// token.
func presentedKey(r *http.Request) string {
	key := r.Header.Get("X-Api-Key")
	if key == "" {
		if auth := r.Header.Get("Authorization"); len(auth) > 7 && strings.EqualFold(auth[:7], "bearer ") {
			key = strings.TrimSpace(auth[7:])
		}
	}
	return key
}

func digest(s string) [32]byte { return sha256.Sum256([]byte(s)) }

func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return strings.Trim(hostport, "[]")
}

func isLoopbackAddr(addr string) bool {
	h, _, err := net.SplitHostPort(addr)
	return err == nil && isLoopbackHost(h)
}

func isLoopbackHost(h string) bool {
	if strings.EqualFold(h, "localhost") || strings.HasSuffix(strings.ToLower(h), ".localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

func loopbackOrigin(origin string) bool {
	u, err := url.Parse(origin)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && isLoopbackHost(u.Hostname())
}
