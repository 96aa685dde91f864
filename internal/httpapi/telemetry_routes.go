package httpapi

import (
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/meridian-gw/meridian/internal/gateway"
	"github.com/meridian-gw/meridian/internal/logring"
	"github.com/meridian-gw/meridian/internal/metrics"
	"github.com/meridian-gw/meridian/internal/telemetry"
	"github.com/meridian-gw/meridian/internal/telemetry/history"
)

// telemetryRoutes are the operator's view of what this Meridian did: the
// request history's figures and pages, the recent log lines, and
// /metrics. They read only what they are given.
type telemetryRoutes struct {
	history *history.History // nil: telemetry is not kept
	metrics *metrics.Metrics
	logs    *logring.Ring
	log     *slog.Logger
	load    func() gateway.BackendLoad // the processes' load now
	tree    func() gateway.TreeGauges  // the session tree's gauges now
}

// summaryWindow bounds the window a summary may ask for.
const (
	defaultWindow = 24 * time.Hour
	maxWindow     = 90 * 24 * time.Hour
	seriesBuckets = 48
)

// telemetrySummary is GET /telemetry/summary's answer: the dashboard's
// figures.
type telemetrySummary struct {
	telemetry.Summary
	Cumulative struct {
		telemetry.Totals
		Since *time.Time `json:"since,omitempty"`
	} `json:"cumulative"`
	Processes gateway.BackendLoad `json:"processes"`
	// Tree is the session tree now, as /inflight's session_tree: requests
	// running, those linked below another, cancellations so far.
	Tree gateway.TreeGauges `json:"session_tree"`
	// CostNote says what the cost figures are.
	CostNote string `json:"cost_note"`
	Dropped  int64  `json:"records_dropped"`
}

const costNote = "API-equivalent cost: an estimate at API list prices; a subscription is not billed per token"

// summary is GET /telemetry/summary.
func (t *telemetryRoutes) summary(w http.ResponseWriter, r *http.Request) {
	window, ok := t.window(w, r)
	if !ok {
		return
	}
	now := time.Now()
	from := now.Add(-window)
	records, err := t.history.Between(r.Context(), from, now)
	if err != nil {
		failWith(t.log, w, r, err)
		return
	}
	var out telemetrySummary
	out.Summary = telemetry.Summarize(records, from, now, seriesBuckets, time.Local)
	tot, since, err := t.history.Cumulative(r.Context())
	if err != nil {
		failWith(t.log, w, r, err)
		return
	}
	out.Cumulative.Totals = tot
	if !since.IsZero() {
		out.Cumulative.Since = &since
	}
	out.Processes = t.load()
	if t.tree != nil {
		out.Tree = t.tree()
	}
	out.CostNote, out.Dropped = costNote, t.history.Dropped()
	writeJSON(w, http.StatusOK, out)
}

// requests is GET /telemetry/requests: a page of records, newest first, filtered.
func (t *telemetryRoutes) requests(w http.ResponseWriter, r *http.Request) {
	if t.history == nil {
		failWith(t.log, w, r, telemetryOff())
		return
	}
	q := r.URL.Query()
	limit, before := 50, int64(0)
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 500 {
			failWith(t.log, w, r, &gateway.Error{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: "limit", Message: "limit must be 1 to 500"})
			return
		}
		limit = n
	}
	if v := q.Get("before"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			failWith(t.log, w, r, &gateway.Error{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: "before", Message: "before must be a record id"})
			return
		}
		before = n
	}
	f := history.Filter{API: q.Get("api"), Client: q.Get("client"), Model: q.Get("model"), Verdict: q.Get("verdict"), Key: q.Get("key"),
		Status: q.Get("status"), MissedCache: q.Get("missed_cache") == "1" || q.Get("missed_cache") == "true"}
	if !statusFilter(f.Status) {
		if _, err := strconv.Atoi(f.Status); err != nil {
			failWith(t.log, w, r, &gateway.Error{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: "status",
				Message: "status must be ok, error, client, failed or an HTTP status code"})
			return
		}
	}
	records, err := t.history.Page(r.Context(), f, before, limit)
	if err != nil {
		failWith(t.log, w, r, err)
		return
	}
	page := struct {
		Requests []telemetry.Record `json:"requests"`
		// NextBefore pages on: pass it as before; absent on the last page.
		NextBefore int64 `json:"next_before,omitempty"`
	}{Requests: records}
	if page.Requests == nil {
		page.Requests = []telemetry.Record{}
	}
	if len(records) == limit {
		page.NextBefore = records[len(records)-1].ID
	}
	writeJSON(w, http.StatusOK, page)
}

// lines is GET /telemetry/logs: the recent log lines.
func (t *telemetryRoutes) lines(w http.ResponseWriter, r *http.Request) {
	lines := []string{}
	if t.logs != nil {
		lines = t.logs.Lines()
	}
	writeJSON(w, http.StatusOK, struct {
		Lines []string `json:"lines"`
	}{lines})
}

// exposition is GET /metrics: the Prometheus exposition.
func (t *telemetryRoutes) exposition(w http.ResponseWriter, r *http.Request) {
	if t.metrics == nil {
		failWith(t.log, w, r, telemetryOff())
		return
	}
	t.metrics.Handler().ServeHTTP(w, r)
}

func telemetryOff() *gateway.Error {
	return &gateway.Error{Status: http.StatusNotFound, Type: "not_found_error", Message: "telemetry is not kept by this meridian"}
}

// window is the ?window= of a request for the request history's
// figures; ok is false, and the refusal answered, without a history or
// with a bad window.
func (t *telemetryRoutes) window(w http.ResponseWriter, r *http.Request) (time.Duration, bool) {
	if t.history == nil {
		failWith(t.log, w, r, telemetryOff())
		return 0, false
	}
	window, werr := windowParam(r)
	if werr != nil {
		failWith(t.log, w, r, werr)
		return 0, false
	}
	return window, true
}

// windowParam reads ?window= (defaultWindow when absent).
func windowParam(r *http.Request) (time.Duration, *gateway.Error) {
	v := r.URL.Query().Get("window")
	if v == "" {
		return defaultWindow, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 || d > maxWindow {
		return 0, &gateway.Error{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: "window",
			Message: "window must be a duration such as 1h, 24h or 168h, at most 2160h"}
	}
	return d, nil
}
