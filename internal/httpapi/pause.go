package httpapi

import (
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/meridian-gw/meridian/internal/gateway"
)

// pauseRetry is the wait a turn refused during a pause is told: a person
// who paused the gateway from the desktop usually resumes it within
// minutes, and a client retrying sooner would only be refused again.
const pauseRetry = 30 * time.Second

// pause is the operator's pause (the desktop companion's pause/resume):
// new model turns are refused with a wait while the running ones finish.
// Unlike the drain it ends: pages, the admin routes and health keep
// answering, so the pause can be lifted.
type pause struct{ on atomic.Bool }

// turn reports whether a request starts model work: what a pause refuses.
func turn(r *http.Request) bool {
	if r.Method != http.MethodPost {
		return false
	}
	p := r.URL.Path
	if rest, ok := strings.CutPrefix(p, "/antigravity"); ok {
		p = rest
	}
	p = strings.TrimPrefix(p, "/v1")
	return p == "/messages" || p == "/chat/completions" || p == "/responses"
}

// hold refuses a model turn while paused.
func (p *pause) hold(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.on.Load() && turn(r) {
			e := gateway.Unavailable("meridian is paused by its operator: it takes no new turns until it is resumed; retry later")
			e.RetryAfter = pauseRetry
			writeError(w, r, e)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// set serves POST /v1/admin/pause and /v1/admin/resume.
func (p *pause) set(on bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p.on.Store(on)
		writeJSON(w, http.StatusOK, map[string]bool{"paused": on})
	}
}
