package httpapi

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/meridian-gw/meridian/internal/capture"
	"github.com/meridian-gw/meridian/internal/telemetry"
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
	rec := s.finishTrace(tr, status, errType)
	s.cfg.Telemetry.Inspector.Keep(capture.From(r.Context()), rec)
}

// finishTrace closes a trace with its outcome, hands the record on and
// returns it.
func (s *Server) finishTrace(tr *telemetry.Trace, status int, errType string) telemetry.Record {
	rec := tr.Finish(status, errType, time.Now())
	// No tokens cost nothing, priced or not; tokens of a model without a
	// price are marked unpriced (-1).
	rec.Cost = 0
	if rec.Tokens != (telemetry.Tokens{}) {
		rec.Cost = -1
	}
	if s.cfg.Telemetry.Prices != nil && rec.Cost < 0 {
		if usd, ok := s.cfg.Telemetry.Prices.Estimate(cmp.Or(rec.Effective, rec.Model), rec.Tokens.Input, rec.Tokens.Output,
			rec.Tokens.CacheRead, rec.Tokens.CacheWrite); ok {
			rec.Cost = usd
		}
	}
	if s.cfg.Telemetry.History != nil {
		s.cfg.Telemetry.History.Add(rec)
	}
	if s.cfg.Telemetry.Metrics != nil {
		s.cfg.Telemetry.Metrics.Observe(rec)
	}
	return rec
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
