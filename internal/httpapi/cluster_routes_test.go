package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/meridian-gw/meridian/internal/cluster"
	"github.com/meridian-gw/meridian/internal/gateway"
)

// unreachable is a store no host can reach.
type unreachable struct{}

func (unreachable) Members(context.Context) ([]cluster.Member, error) {
	return nil, errors.New("no store")
}
func (unreachable) Drain(context.Context)          {}
func (unreachable) Reachable(context.Context) bool { return false }

// The cluster routes stand alone: a host alone is ready and lists itself
// with its load now; draining, or cut off from its store, it is not ready
// and says why, with a wait; a store that cannot list the hosts is a 503.
func TestClusterRoutesAlone(t *testing.T) {
	draining := false
	c := clusterRoutes{host: "h1", store: "sqlite", log: slog.New(slog.DiscardHandler),
		load: func() gateway.BackendLoad { return gateway.BackendLoad{Live: 2, Running: 1} }, draining: func() bool { return draining }, paused: func() bool { return false }}
	get := func(h http.HandlerFunc, target string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		h(w, httptest.NewRequest(http.MethodGet, target, nil))
		return w
	}
	if w := get(c.ready, "/ready"); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"host":"h1"`) {
		t.Fatalf("ready alone: %d %s", w.Code, w.Body)
	}
	if w := get(c.hosts, "/cluster"); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"live_processes":2`) {
		t.Fatalf("cluster alone: %d %s", w.Code, w.Body)
	}
	draining = true
	if w := get(c.ready, "/ready"); w.Code != http.StatusServiceUnavailable || !strings.Contains(w.Body.String(), "draining") || w.Header().Get("Retry-After") == "" {
		t.Fatalf("ready while draining: %d %s", w.Code, w.Body)
	}
	draining, c.cluster = false, unreachable{}
	if w := get(c.ready, "/ready"); w.Code != http.StatusServiceUnavailable || !strings.Contains(w.Body.String(), "store_unreachable") {
		t.Fatalf("ready without the store: %d %s", w.Code, w.Body)
	}
	if w := get(c.hosts, "/cluster"); w.Code != http.StatusServiceUnavailable || !strings.Contains(w.Body.String(), "could not be read") {
		t.Fatalf("cluster without the store: %d %s", w.Code, w.Body)
	}
}
