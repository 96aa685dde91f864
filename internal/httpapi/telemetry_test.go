package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/meridian-gw/meridian/internal/gateway"
	"github.com/meridian-gw/meridian/internal/telemetry"
	"github.com/meridian-gw/meridian/internal/testkit"
)

// telemetryTraffic makes four model requests through the real CLI: a new
// conversation, its streamed continuation (on the live process), a chat
// completion, and a request the decoder refuses. It returns the stack.
func telemetryTraffic(t *testing.T) *stack {
	t.Helper()
	s := newStack(t, stackOptions{sessions: true, telemetry: true})
	s.Upstream.Always(testkit.Reply{Text: "ok", Usage: scriptedUsage})
	conv := option.WithHeader("X-Claude-Code-Session-Id", "telemetry-1")
	first := simpleParams("first turn")
	if _, err := s.client(conv).Messages.New(context.Background(), first); err != nil {
		t.Fatal(err)
	}
	second := first
	second.Messages = append(second.Messages, sdk.NewAssistantMessage(sdk.NewTextBlock("ok")), userMessage("second turn"))
	st := s.client(conv).Messages.NewStreaming(context.Background(), second)
	for st.Next() {
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.chatClient().Chat.Completions.New(context.Background(), chatParams(openai.UserMessage("hello"))); err != nil {
		t.Fatal(err)
	}
	resp, body := do(t, http.MethodPost, s.URL+"/v1/messages", `{"model":"test-model","max_tokens":10,"messages":"nope"}`, nil)
	anthropicError(t, resp, body, 400, "invalid_request_error", "messages")
	if err := s.History.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

// Each request leaves one record with what Meridian decided and measured,
// and the summary and /metrics count the same requests.
func TestTelemetryRecordsEachRequest(t *testing.T) {
	t.Parallel()
	s := telemetryTraffic(t)

	var page struct {
		Requests []telemetry.Record `json:"requests"`
	}
	if resp := getJSON(t, s.URL+"/telemetry/requests", nil, &page); resp.StatusCode != 200 {
		t.Fatalf("GET /telemetry/requests: %d", resp.StatusCode)
	}
	if len(page.Requests) != 4 {
		t.Fatalf("%d records, want 4: %+v", len(page.Requests), page.Requests)
	}
	bad, chat, cont, first := page.Requests[0], page.Requests[1], page.Requests[2], page.Requests[3] // newest first
	if bad.Status != 400 || bad.ErrorType != "invalid_request_error" || bad.API != telemetry.APIMessages {
		t.Errorf("refused request: %+v", bad)
	}
	if chat.API != telemetry.APIChat || chat.Status != 200 || chat.Tokens.Output != 7 {
		t.Errorf("chat request: %+v", chat)
	}
	if first.Verdict != "new" || first.Live || first.Client != "claude-code" || first.Conversation == "" {
		t.Errorf("first turn: %+v", first)
	}
	if cont.Verdict != "continuation" || !cont.Live || !cont.Stream || cont.Conversation != first.Conversation {
		t.Errorf("continuation: %+v", cont)
	}
	// scriptedUsage: 11 input, 5 cache writes, 3 cache reads, 7 output;
	// test-model is priced 3/15/0.30/3.75 dollars per million tokens.
	want := telemetry.Tokens{Input: 11, Output: 7, CacheRead: 3, CacheWrite: 5}
	if cont.Tokens != want || cont.TTFT <= 0 || cont.TTFT > cont.Total || cont.Effective != "test-model" {
		t.Errorf("continuation figures: %+v", cont)
	}
	if wantCost := (11*3 + 7*15 + 3*0.30 + 5*3.75) / 1e6; abs(cont.Cost-wantCost) > 1e-12 {
		t.Errorf("cost %v, want %v", cont.Cost, wantCost)
	}
	for _, r := range page.Requests {
		if strings.Contains(r.Conversation, "telemetry-1") {
			t.Errorf("a record names the conversation key: %+v", r)
		}
	}

	var sum struct {
		Totals     telemetry.Totals `json:"totals"`
		Cumulative telemetry.Totals `json:"cumulative"`
		LiveRatio  float64          `json:"live_ratio"`
		CostNote   string           `json:"cost_note"`
	}
	getJSON(t, s.URL+"/telemetry/summary?window=1h", nil, &sum)
	if sum.Totals.Requests != 4 || sum.Totals.Errors != 1 || sum.Cumulative.Requests != 4 || sum.LiveRatio != 1 ||
		sum.Totals.Tokens.Output != 21 || !strings.Contains(sum.CostNote, "estimate") {
		t.Errorf("summary %+v", sum)
	}

	families := scrape(t, s.URL+"/metrics")
	byStatus, byAPI := map[string]float64{}, map[string]float64{}
	for _, m := range families["meridian_requests_total"].GetMetric() {
		byStatus[label(m, "status")] += m.GetCounter().GetValue()
		byAPI[label(m, "api")] += m.GetCounter().GetValue()
	}
	if byStatus["200"] != 3 || byStatus["400"] != 1 || byAPI["chat"] != 1 || byAPI["messages"] != 3 {
		t.Errorf("meridian_requests_total by status %v, by api %v", byStatus, byAPI)
	}
	var output float64
	for _, m := range families["meridian_tokens_total"].GetMetric() {
		if label(m, "kind") == "output" {
			output += m.GetCounter().GetValue()
		}
	}
	if output != 21 {
		t.Errorf("output tokens %v, want 21", output)
	}
	var hist uint64
	for _, m := range families["meridian_request_duration_seconds"].GetMetric() {
		hist += m.GetHistogram().GetSampleCount()
	}
	if hist != 4 {
		t.Errorf("duration histogram counted %d requests", hist)
	}
	if _, ok := families["meridian_claude_processes"]; !ok {
		t.Error("no meridian_claude_processes gauge")
	}
	// The conversation's process is alive and idle: its memory is measured
	// from /proc at the scrape (an idle claude holds about 100 MiB).
	if mem := families["meridian_claude_memory_bytes"].GetMetric(); len(mem) != 1 || mem[0].GetGauge().GetValue() < 20<<20 {
		t.Errorf("meridian_claude_memory_bytes = %v", mem)
	}
}

func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, body := do(t, http.MethodGet, url, "", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("GET /metrics: %d", resp.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v\n%s", err, body)
	}
	return families
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}

// The rate-limit windows the CLI reports on a turn reach /v1/usage/quota
// and /providers/status, per profile, with when they were seen. (A
// scripted CLI: the real one reports them only with a subscription login.)
func TestQuotaShowsTheReportedWindows(t *testing.T) {
	t.Parallel()
	resets := time.Now().Add(3 * time.Hour).Unix()
	window := fmt.Sprintf(`{"type":"rate_limit_event","rate_limit_info":{"status":"allowed_warning","resetsAt":%d,"rateLimitType":"five_hour","utilization":0.8},"session_id":"fake-session"}`, resets)
	path, scriptEnv := testkit.FakeClaude(t, "@user", testkit.FakeInit, window, testkit.FakeMessageStart, testkit.FakeTextStart,
		testkit.FakeTextDelta("ok"), testkit.FakeTextStop, testkit.FakeMessageDelta, testkit.FakeMessageStop, testkit.FakeResult)
	s := newStack(t, stackOptions{claudePath: path, env: []string{scriptEnv}})
	var q struct {
		Profiles []struct {
			Profile string               `json:"profile"`
			Windows []gateway.RateWindow `json:"windows"`
		} `json:"profiles"`
	}
	getJSON(t, s.URL+"/v1/usage/quota", nil, &q)
	if len(q.Profiles) != 1 || len(q.Profiles[0].Windows) != 0 {
		t.Fatalf("before any turn: %+v", q)
	}
	if _, err := s.client().Messages.New(context.Background(), simpleParams("hi")); err != nil {
		t.Fatal(err)
	}
	getJSON(t, s.URL+"/v1/usage/quota", nil, &q)
	if len(q.Profiles) != 1 || q.Profiles[0].Profile != "default" || len(q.Profiles[0].Windows) != 1 {
		t.Fatalf("after a turn: %+v", q)
	}
	w := q.Profiles[0].Windows[0]
	if w.Type != "five_hour" || w.Status != "allowed_warning" || w.Utilization != 0.8 || w.ResetsAt.Unix() != resets || w.ObservedAt.IsZero() {
		t.Fatalf("window %+v", w)
	}
	if _, body := do(t, http.MethodGet, s.URL+"/providers/status", "", nil); !strings.Contains(string(body), `"five_hour"`) {
		t.Fatalf("providers: %s", body)
	}
}

// A background response is one record, finished when its run ends: with
// the run's model, tokens and outcome, not the queued answer's.
func TestTelemetryRecordsABackgroundRun(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{sessions: true, telemetry: true})
	c, p, gate := gatedBackground(s)
	got, err := c.Responses.New(context.Background(), p)
	if err != nil || got.Status != "queued" {
		t.Fatalf("%v %s", err, got.RawJSON())
	}
	records := func() []telemetry.Record {
		t.Helper()
		if err := s.History.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		var page struct {
			Requests []telemetry.Record `json:"requests"`
		}
		getJSON(t, s.URL+"/telemetry/requests", nil, &page)
		return page.Requests
	}
	if n := len(records()); n != 0 {
		t.Fatalf("%d records while the run goes on, want none yet", n)
	}
	close(gate)
	if done := waitStatus(t, c, got.ID); done.Status != "completed" {
		t.Fatalf("%s", done.RawJSON())
	}
	var recs []telemetry.Record
	waitFor(t, func() bool { recs = records(); return len(recs) > 0 })
	if len(recs) != 1 || recs[0].API != telemetry.APIResponses || recs[0].Status != 200 || recs[0].Tokens.Output != 7 || recs[0].Effective == "" {
		t.Fatalf("records %+v", recs)
	}
}

// A retry answered from its saved answer is recorded as a replay of the
// model it asked for, with no tokens spent.
func TestTelemetryRecordsAReplay(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{sessions: true, telemetry: true})
	s.Upstream.Always(testkit.Reply{Text: "once", Usage: scriptedUsage})
	keyed := option.WithHeader("Idempotency-Key", "telemetry-replay")
	for range 2 {
		if _, err := s.client(keyed).Messages.New(context.Background(), simpleParams("only once")); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.History.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	var page struct {
		Requests []telemetry.Record `json:"requests"`
	}
	getJSON(t, s.URL+"/telemetry/requests", nil, &page)
	if len(page.Requests) != 2 {
		t.Fatalf("%d records", len(page.Requests))
	}
	replay, first := page.Requests[0], page.Requests[1]
	if !replay.Replay || replay.Model == "" || replay.Model != first.Model || replay.Tokens != (telemetry.Tokens{}) || first.Replay {
		t.Fatalf("replay %+v, first %+v", replay, first)
	}
}
