package gateway

import (
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/backend"
)

func TestClassify(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		f          backend.Failure
		window     time.Time
		status     int
		typ        string
		retryAfter time.Duration
	}{
		{backend.Failure{Kind: backend.FailUpstream, Status: 429}, time.Time{}, 429, "rate_limit_error", 60 * time.Second},
		{backend.Failure{Kind: backend.FailUpstream, Status: 429}, now.Add(5 * time.Minute), 429, "rate_limit_error", 5 * time.Minute},
		{backend.Failure{Kind: backend.FailUpstream, Status: 429, RetryDelay: 3200 * time.Millisecond}, time.Time{}, 429, "rate_limit_error", 4 * time.Second},
		{backend.Failure{Kind: backend.FailUpstream, Status: 429, ResetsAt: now.Add(time.Hour)}, time.Time{}, 429, "rate_limit_error", time.Hour},
		{backend.Failure{Kind: backend.FailUpstream, Status: 529}, time.Time{}, 529, "overloaded_error", 5 * time.Second},
		{backend.Failure{Kind: backend.FailUpstream, Status: 401}, time.Time{}, 401, "authentication_error", 0},
		{backend.Failure{Kind: backend.FailUpstream, Status: 403}, time.Time{}, 403, "permission_error", 0},
		{backend.Failure{Kind: backend.FailUpstream, Status: 404}, time.Time{}, 404, "not_found_error", 0},
		{backend.Failure{Kind: backend.FailUpstream, Status: 400}, time.Time{}, 400, "invalid_request_error", 0},
		{backend.Failure{Kind: backend.FailUpstream, Status: 413}, time.Time{}, 413, "request_too_large", 0},
		{backend.Failure{Kind: backend.FailUpstream, Status: 500}, time.Time{}, 502, "api_error", 0},
		{backend.Failure{Kind: backend.FailUpstream, Status: 502}, time.Time{}, 502, "api_error", 0},
		{backend.Failure{Kind: backend.FailUpstream, Status: 503}, time.Time{}, 503, "api_error", 5 * time.Second},
		{backend.Failure{Kind: backend.FailUpstream, Status: 0, Message: "Connection refused"}, time.Time{}, 503, "api_error", 5 * time.Second},
		{backend.Failure{Kind: backend.FailPromptTooLong, Status: 400}, time.Time{}, 400, "invalid_request_error", 0},
		{backend.Failure{Kind: backend.FailLimit}, time.Time{}, 500, "api_error", 0},
		{backend.Failure{Kind: backend.FailBackend, Message: "claude exited"}, time.Time{}, 500, "api_error", 0},
		{backend.Failure{Kind: backend.FailUnavailable}, time.Time{}, 503, "api_error", 5 * time.Second},
	}
	for _, c := range cases {
		e := classify(&c.f, c.window, now)
		if e.Status != c.status || e.Type != c.typ || e.RetryAfter != c.retryAfter {
			t.Errorf("%+v: got %d %s wait %v, want %d %s wait %v", c.f, e.Status, e.Type, e.RetryAfter, c.status, c.typ, c.retryAfter)
		}
	}
}
