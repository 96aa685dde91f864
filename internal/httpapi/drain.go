package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/meridian-gw/meridian/internal/gateway"
)

// DefaultLastWait bounds how long cancelled handlers may take to return.
const DefaultLastWait = 10 * time.Second

// MaxHeaderBytes bounds a request's headers, cookies included: what
// these APIs need (a key, a session id, an SDK's dozen) is a few KiB, so
// 64 KiB leaves room for any client and refuses a megabyte with 431.
const MaxHeaderBytes = 64 << 10

// drainRetry is the wait a request refused during the drain is told: about
// the time a supervisor takes to start meridian again.
const drainRetry = 5 * time.Second

// gate admits requests and counts those running. Once closed it admits
// none, draining ends, and idle is closed when the last admitted one
// returns.
type gate struct {
	// draining ends when the gate closes: bodies still arriving are cut.
	draining   context.Context
	startDrain context.CancelFunc

	mu      sync.Mutex
	closed  bool
	running map[*http.Request]struct{} // for the log of what outlived the drain
	idle    chan struct{}
}

func newGate() gate {
	ctx, cancel := context.WithCancel(context.Background())
	return gate{draining: ctx, startDrain: cancel, running: map[*http.Request]struct{}{}}
}

// enter admits a request, or reports false once the gate is closed.
func (g *gate) enter(r *http.Request) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.running[r] = struct{}{}
	return true
}

func (g *gate) leave(r *http.Request) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.running, r)
	if g.closed && len(g.running) == 0 {
		close(g.idle)
	}
}

// close admits no more requests; the returned channel closes when none
// runs.
func (g *gate) close() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.closed {
		g.closed, g.idle = true, make(chan struct{})
		g.startDrain()
		if len(g.running) == 0 {
			close(g.idle)
		}
	}
	return g.idle
}

// isClosed reports whether the drain has begun.
func (g *gate) isClosed() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.closed
}

// stillRunning names the requests that have not returned, a few at most.
func (g *gate) stillRunning() (n int, some []string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for r := range g.running {
		if len(some) < 10 {
			some = append(some, r.Method+" "+r.URL.Path)
		}
	}
	return len(g.running), some
}

// track admits a request through the gate: during the drain a new request
// is answered 503 with a wait, and never starts work.
func (s *Server) track(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ready" || r.URL.Path == "/health" {
			// Readiness says the drain itself, and liveness stays
			// true through it: a supervisor that saw a 503 here would
			// restart the host in the middle of its drain. Neither
			// starts work of its own.
			next.ServeHTTP(w, r)
			return
		}
		if !s.gate.enter(r) {
			s.log.InfoContext(r.Context(), "refused while draining", "method", r.Method, "path", r.URL.Path)
			w.Header().Set("Connection", "close")
			e := gateway.Unavailable("meridian is shutting down: it finishes the requests it has and takes no new ones; retry shortly")
			e.RetryAfter = drainRetry
			writeError(w, r, e)
			return
		}
		defer s.gate.leave(r)
		next.ServeHTTP(w, s.gate.withDrain(r))
	})
}

// Serve answers requests on ln until ctx ends, then drains: new requests
// get 503 with Retry-After while running ones have DrainTimeout (or until
// Hurry closes) to finish; those still running are then cancelled, answered
// as cut short by the shutdown, and joined. A body still arriving when the
// drain begins is cut at once. Serve returns once every handler has
// returned, or DefaultLastWait after the cancel, naming those that did not.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	base, cancelRequests := context.WithCancelCause(context.Background())
	defer cancelRequests(nil)
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		MaxHeaderBytes:    MaxHeaderBytes,
		IdleTimeout:       120 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return base },
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()

	select {
	case err := <-errc: // the listener failed
		idle := s.gate.close()
		cancelRequests(errShutdown)
		s.awaitHandlers(idle)
		s.cfg.Responses.Jobs.Close()
		return err
	case <-ctx.Done():
	}
	idle := s.gate.close()
	s.log.Info("shutting down: finishing running requests, refusing new ones", "timeout", s.cfg.Listen.DrainTimeout)
	if s.cfg.Hosts.Cluster != nil {
		told, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		s.cfg.Hosts.Cluster.Drain(told)
		cancel()
	}
	timer := time.NewTimer(s.cfg.Listen.DrainTimeout)
	defer timer.Stop()
	select {
	case <-idle:
	case <-timer.C:
		s.log.Warn("drain timed out: cancelling running requests")
	case <-s.cfg.Listen.Hurry:
		s.log.Warn("asked again to stop: cancelling running requests")
	}
	// Cancelled handlers answer their clients and join their processes;
	// each is waited for, within a bound: a handler wedged past it (a
	// subprocess that ignores every signal, say) must not keep meridian
	// from exiting.
	cancelRequests(errShutdown)
	s.awaitHandlers(idle)
	closing, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := srv.Shutdown(closing); err != nil {
		_ = srv.Close()
	}
	// Background responses end with the server: each is recorded as
	// failed, to be sent again.
	s.cfg.Responses.Jobs.Close()
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// awaitHandlers waits for idle up to the last wait, and names what is
// still running when it gives up.
func (s *Server) awaitHandlers(idle <-chan struct{}) {
	t := time.NewTimer(s.lastWait)
	defer t.Stop()
	select {
	case <-idle:
	case <-t.C:
		n, some := s.gate.stillRunning()
		s.log.Error("requests still running after they were cancelled; exiting without them", "running", n, "requests", some, "waited", s.lastWait)
	}
}
