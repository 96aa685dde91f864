package telemetry

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// Pure: no I/O packages.
func TestPure(t *testing.T) { testkit.CheckPure(t) }

func TestTraceIsSafeWhenAbsent(t *testing.T) {
	tr := From(context.Background())
	tr.Request("m", true)
	tr.Verdict("continuation", true)
	tr.FirstByte(time.Now())
	if r := tr.Finish(200, "", time.Now()); r != (Record{}) {
		t.Fatalf("a nil trace made %+v", r)
	}
}

func TestTraceRecordsTheFirstByteOnce(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	tr := NewTrace(APIChat, t0)
	ctx := With(context.Background(), tr)
	From(ctx).Conversation("opencode", "default", "secret-key")
	From(ctx).FirstByte(t0.Add(40 * time.Millisecond))
	From(ctx).FirstByte(t0.Add(90 * time.Millisecond))
	From(ctx).Answered("claude-sonnet-5-5", Tokens{Input: 3, Output: 5})
	r := tr.Finish(200, "", t0.Add(time.Second))
	if r.TTFT != 40*time.Millisecond || r.Total != time.Second || r.Effective != "claude-sonnet-5-5" || r.Tokens.Output != 5 {
		t.Fatalf("%+v", r)
	}
	if r.Conversation == "" || r.Conversation == "secret-key" || len(r.Conversation) != 12 {
		t.Fatalf("conversation label %q", r.Conversation)
	}
}

func TestSummarize(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	rec := func(min int, status int, verdict string, live bool, ttft, total time.Duration, tok Tokens, cost float64) Record {
		return Record{Time: t0.Add(time.Duration(min) * time.Minute), API: APIMessages, Client: "claude-code", Model: "sonnet",
			Effective: "claude-sonnet-5-5", Verdict: verdict, Live: live, TTFT: ttft, Total: total, Tokens: tok, Cost: cost, Status: status}
	}
	records := []Record{
		rec(1, 200, "diverged", false, 500*time.Millisecond, time.Second, Tokens{Input: 100, CacheWrite: 900}, 0.01),
		rec(2, 200, "continuation", true, 60*time.Millisecond, 200*time.Millisecond, Tokens{Input: 10, CacheRead: 990}, 0.002),
		rec(3, 200, "continuation", false, 300*time.Millisecond, 700*time.Millisecond, Tokens{Input: 1000}, 0.004),
		rec(4, 429, "", false, 0, 5*time.Millisecond, Tokens{}, 0),
		rec(-5, 200, "", false, time.Second, time.Second, Tokens{Input: 1}, 1), // before the window
	}
	records[3].ErrorType = "rate_limit_error"
	records[2].Client, records[2].Cost = "opencode", -1
	s := Summarize(records, t0, t0.Add(time.Hour), 12, time.UTC)
	if s.Totals.Requests != 4 || s.Totals.Errors != 1 || s.Totals.Unpriced != 1 {
		t.Fatalf("totals %+v", s.Totals)
	}
	if got, want := s.CacheHitRatio, 990.0/3000.0; got != want {
		t.Fatalf("cache hit ratio %v, want %v", got, want)
	}
	if s.LiveRatio != 0.5 || s.CacheMisses != 1 {
		t.Fatalf("live %v misses %d", s.LiveRatio, s.CacheMisses)
	}
	if s.TTFT.P50 != 300 || s.TTFT.P95 != 500 || s.Total.P50 != 700 {
		t.Fatalf("ttft %+v total %+v", s.TTFT, s.Total)
	}
	if s.BucketSeconds != 300 || s.Series[0].Requests != 4 || s.Series[0].Errors != 1 {
		t.Fatalf("bucket %d: %+v", s.BucketSeconds, s.Series[0])
	}
	if len(s.Errors) != 1 || s.Errors[0].Name != "rate_limit_error" {
		t.Fatalf("errors %+v", s.Errors)
	}
	if s.ByClient[0].Name != "claude-code" || s.ByClient[0].Requests != 3 || s.ByDay[0].Name != "2026-11-30" {
		t.Fatalf("clients %+v days %+v", s.ByClient, s.ByDay)
	}
}

// A bad request, a refused key and a client that left are the client's
// to fix; a limit, an overload and a CLI that failed are not: the
// summary keeps them apart, in its totals, its series and its types.
func TestClientErrorsApartFromFailures(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)
	var records []Record
	for i, e := range []struct {
		status int
		typ    string
	}{{200, ""}, {400, "invalid_request_error"}, {401, "authentication_error"}, {404, "not_found_error"}, {499, "client_gone"},
		{429, "rate_limit_error"}, {529, "overloaded_error"}, {500, "api_error"}, {400, "invalid_request_error"}} {
		records = append(records, Record{Time: t0.Add(time.Duration(i) * time.Second), Status: e.status, ErrorType: e.typ})
	}
	s := Summarize(records, t0, t0.Add(time.Hour), 4, time.UTC)
	if s.Totals.Errors != 8 || s.Totals.ClientErrors != 5 || s.Series[0].ClientErrors != 5 || s.Series[0].Errors != 8 {
		t.Fatalf("totals %+v, first slice %+v", s.Totals, s.Series[0])
	}
	names := func(gs []Group) (out []string) {
		for _, g := range gs {
			out = append(out, fmt.Sprintf("%s=%d", g.Name, g.Requests))
		}
		return out
	}
	if got := names(s.Errors); !slices.Equal(got, []string{"api_error=1", "overloaded_error=1", "rate_limit_error=1"}) {
		t.Errorf("failures by type %v", got)
	}
	if got := names(s.ClientErrors); !slices.Equal(got, []string{"invalid_request_error=2", "authentication_error=1", "client_gone=1", "not_found_error=1"}) {
		t.Errorf("client errors by type %v", got)
	}
}

func TestAFailureKeepsItsMessageCut(t *testing.T) {
	tr := NewTrace(APIMessages, time.Now())
	tr.Failed(400, "invalid_request_error", strings.Repeat("é", 1000))
	rec := tr.Finish(200, "", time.Now())
	if n := utf8.RuneCountInString(rec.ErrorMessage); rec.Status != 400 || n != maxErrorMessage || !strings.HasSuffix(rec.ErrorMessage, "…") {
		t.Fatalf("status %d, message of %d runes", rec.Status, n)
	}
}
