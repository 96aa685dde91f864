package httpapi

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/meridian-gw/meridian/internal/logring"
)

// The telemetry routes stand alone: without a history they say that
// telemetry is not kept (404 in the Messages API's shape), a window out
// of bounds is refused naming the parameter, and the log lines are what
// the ring holds.
func TestTelemetryRoutesAlone(t *testing.T) {
	logs := logring.New(4)
	_, _ = logs.Write([]byte("time=1 level=INFO msg=started\n"))
	tr := telemetryRoutes{logs: logs, log: slog.New(slog.DiscardHandler)}
	get := func(h http.HandlerFunc, target string) (int, string) {
		w := httptest.NewRecorder()
		h(w, httptest.NewRequest(http.MethodGet, target, nil))
		return w.Code, w.Body.String()
	}
	for _, c := range []struct {
		name   string
		h      http.HandlerFunc
		target string
	}{
		{"summary", tr.summary, "/telemetry/summary"},
		{"requests", tr.requests, "/telemetry/requests"},
		{"metrics", tr.exposition, "/metrics"},
	} {
		if code, body := get(c.h, c.target); code != http.StatusNotFound || !strings.Contains(body, "telemetry is not kept") {
			t.Errorf("%s without a history: %d %s", c.name, code, body)
		}
	}
	if code, body := get(tr.lines, "/telemetry/logs"); code != http.StatusOK || !strings.Contains(body, "msg=started") {
		t.Errorf("logs: %d %s", code, body)
	}
	if _, err := windowParam(httptest.NewRequest(http.MethodGet, "/telemetry/summary?window=100d", nil)); err == nil || err.Param != "window" {
		t.Errorf("a window of 100 days: %v", err)
	}
}
