package httpapi

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/meridian-gw/meridian/internal/gateway"
	"github.com/meridian-gw/meridian/internal/telemetry"
	"github.com/meridian-gw/meridian/internal/telemetry/history"
)

// modelAPI names the API of a model request, or "" for other routes.
func modelAPI(r *http.Request) string {
	if r.Method != http.MethodPost {
		return ""
	}
	switch r.URL.Path {
	case "/v1/messages", "/messages":
		return telemetry.APIMessages
	case "/v1/chat/completions", "/chat/completions":
		return telemetry.APIChat
	case "/v1/responses", "/responses":
		return telemetry.APIResponses
	}
	return ""
}

// statusClientGone is recorded for a request whose client left before its
// answer: no status reached anyone.
const statusClientGone = 499

// record closes a model request's trace and hands the record to the
// history and the metrics, off the request path. A client that hung up
// once its whole answer was written (Codex closes on response.completed,
// while the handler still stores the response) was answered.
func (s *Server) record(r *http.Request, tr *telemetry.Trace, status int) {
	errType := ""
	if r.Context().Err() != nil && !tr.IsDelivered() && !errors.Is(context.Cause(r.Context()), errShutdown) {
		status, errType = statusClientGone, "client_gone"
	}
	s.finishTrace(tr, status, errType)
}

// finishTrace closes a trace with its outcome and hands the record on.
func (s *Server) finishTrace(tr *telemetry.Trace, status int, errType string) {
	if s.cfg.History == nil && s.cfg.Metrics == nil {
		return
	}
	rec := tr.Finish(status, errType, time.Now())
	// No tokens cost nothing, priced or not; tokens of a model without a
	// price are marked unpriced (-1).
	rec.Cost = 0
	if rec.Tokens != (telemetry.Tokens{}) {
		rec.Cost = -1
	}
	if s.cfg.Prices != nil && rec.Cost < 0 {
		if usd, ok := s.cfg.Prices.Estimate(cmp.Or(rec.Effective, rec.Model), rec.Tokens.Input, rec.Tokens.Output,
			rec.Tokens.CacheRead, rec.Tokens.CacheWrite); ok {
			rec.Cost = usd
		}
	}
	if s.cfg.History != nil {
		s.cfg.History.Add(rec)
	}
	if s.cfg.Metrics != nil {
		s.cfg.Metrics.Observe(rec)
	}
}

// noteFailure tells the request's trace the error it is answered with.
func noteFailure(r *http.Request, err error) {
	if err == nil || errors.Is(err, context.Canceled) {
		return
	}
	ge := asGatewayError(settled(r, err))
	telemetry.From(r.Context()).Failed(ge.Status, ge.Type, ge.Message)
}

// statusFilter says whether a request list's status filter is one of the
// named ones: "" (any), ok, error (any error), client (the client's to
// fix), failed (the gateway's or the upstream's).
func statusFilter(s string) bool {
	switch s {
	case "", "ok", "error", "client", "failed":
		return true
	}
	return false
}

// summaryWindow bounds the window a summary may ask for.
const (
	defaultWindow = 24 * time.Hour
	maxWindow     = 90 * 24 * time.Hour
	seriesBuckets = 48
)

// telemetrySummary is GET /telemetry/summary: the dashboard's figures.
type telemetrySummary struct {
	telemetry.Summary
	Cumulative struct {
		telemetry.Totals
		Since *time.Time `json:"since,omitempty"`
	} `json:"cumulative"`
	Processes gateway.BackendLoad `json:"processes"`
	// CostNote says what the cost figures are.
	CostNote string `json:"cost_note"`
	Dropped  int64  `json:"records_dropped"`
}

const costNote = "API-equivalent cost: an estimate at API list prices; a subscription is not billed per token"

func (s *Server) telemetrySummary(w http.ResponseWriter, r *http.Request) {
	window, ok := s.historyWindow(w, r)
	if !ok {
		return
	}
	now := time.Now()
	from := now.Add(-window)
	records, err := s.cfg.History.Between(r.Context(), from, now)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var out telemetrySummary
	out.Summary = telemetry.Summarize(records, from, now, seriesBuckets, time.Local)
	tot, since, err := s.cfg.History.Cumulative(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out.Cumulative.Totals = tot
	if !since.IsZero() {
		out.Cumulative.Since = &since
	}
	out.Processes = s.load()
	out.CostNote, out.Dropped = costNote, s.cfg.History.Dropped()
	writeJSON(w, http.StatusOK, out)
}

// GET /telemetry/requests: a page of records, newest first, filtered.
func (s *Server) telemetryRequests(w http.ResponseWriter, r *http.Request) {
	if s.cfg.History == nil {
		s.fail(w, r, telemetryOff())
		return
	}
	q := r.URL.Query()
	limit, before := 50, int64(0)
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 500 {
			s.fail(w, r, &gateway.Error{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: "limit", Message: "limit must be 1 to 500"})
			return
		}
		limit = n
	}
	if v := q.Get("before"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			s.fail(w, r, &gateway.Error{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: "before", Message: "before must be a record id"})
			return
		}
		before = n
	}
	f := history.Filter{API: q.Get("api"), Client: q.Get("client"), Model: q.Get("model"), Verdict: q.Get("verdict"), Key: q.Get("key"),
		Status: q.Get("status"), MissedCache: q.Get("missed_cache") == "1" || q.Get("missed_cache") == "true"}
	if !statusFilter(f.Status) {
		if _, err := strconv.Atoi(f.Status); err != nil {
			s.fail(w, r, &gateway.Error{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: "status",
				Message: "status must be ok, error, client, failed or an HTTP status code"})
			return
		}
	}
	records, err := s.cfg.History.Page(r.Context(), f, before, limit)
	if err != nil {
		s.fail(w, r, err)
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

// GET /telemetry/logs: the recent log lines.
func (s *Server) telemetryLogs(w http.ResponseWriter, r *http.Request) {
	lines := []string{}
	if s.cfg.Logs != nil {
		lines = s.cfg.Logs.Lines()
	}
	writeJSON(w, http.StatusOK, struct {
		Lines []string `json:"lines"`
	}{lines})
}

// GET /metrics: the Prometheus exposition.
func (s *Server) metrics(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Metrics == nil {
		s.fail(w, r, telemetryOff())
		return
	}
	s.cfg.Metrics.Handler().ServeHTTP(w, r)
}

func telemetryOff() *gateway.Error {
	return &gateway.Error{Status: http.StatusNotFound, Type: "not_found_error", Message: "telemetry is not kept by this meridian"}
}

// historyWindow is the ?window= of a request for the request history's
// figures; ok is false, and the refusal answered, without a history or
// with a bad window.
func (s *Server) historyWindow(w http.ResponseWriter, r *http.Request) (time.Duration, bool) {
	if s.cfg.History == nil {
		s.fail(w, r, telemetryOff())
		return 0, false
	}
	window, werr := windowParam(r)
	if werr != nil {
		s.fail(w, r, werr)
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
