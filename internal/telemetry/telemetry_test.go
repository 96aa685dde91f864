package telemetry

import (
	"context"
	"testing"
	"time"

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
