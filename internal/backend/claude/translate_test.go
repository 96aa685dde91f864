package claude

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/backend"
)

// play feeds recorded CLI lines to a translator and renders what it emits.
func play(t *testing.T, lines ...string) ([]string, *backend.Result) {
	t.Helper()
	var got []string
	tr := newTranslator(func(ev *backend.Event) error {
		switch ev.Kind {
		case backend.MessageStart:
			got = append(got, fmt.Sprintf("message in=%d", ev.Usage.InputTokens))
		case backend.BlockStart:
			got = append(got, fmt.Sprintf("start %d %s", ev.Index, ev.BlockType))
		case backend.BlockDelta:
			got = append(got, fmt.Sprintf("delta %d %s %q", ev.Index, ev.DeltaType, ev.Text))
		case backend.BlockStop:
			got = append(got, fmt.Sprintf("stop %d", ev.Index))
		case backend.Abandon:
			got = append(got, fmt.Sprintf("abandon %d", ev.Index))
		case backend.MessageDelta:
			got = append(got, "stop_reason "+ev.StopReason)
		case backend.Retry:
			got = append(got, fmt.Sprintf("retry %d %v", ev.Status, ev.RetryDelay))
		case backend.RateLimit:
			got = append(got, fmt.Sprintf("ratelimit %s %d", ev.LimitStatus, ev.ResetsAt.Unix()))
		}
		return nil
	}, nil)
	for _, l := range lines {
		var ln line
		if err := json.Unmarshal([]byte(l), &ln); err != nil {
			t.Fatalf("bad fixture %s: %v", l, err)
		}
		res, err := tr.handle(&ln)
		if err != nil {
			t.Fatal(err)
		}
		if res != nil {
			return got, res
		}
	}
	return got, nil
}

func se(msg, event string) string {
	return `{"type":"stream_event","event":` + event + `,"api_message_id":"` + msg + `","parent_tool_use_id":null,"session_id":"s1"}`
}

const okResult = `{"type":"result","subtype":"success","is_error":false,"stop_reason":"end_turn","session_id":"s1","usage":{"input_tokens":15,"output_tokens":9,"cache_read_input_tokens":2}}`

func TestStreamedTurnsGetTurnWideIndices(t *testing.T) {
	got, res := play(t,
		`{"type":"system","subtype":"init","session_id":"s1"}`,
		se("m1", `{"type":"message_start","message":{"id":"m1","usage":{"input_tokens":11}}}`),
		se("m1", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`),
		se("m1", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"calling"}}`),
		`{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"calling"}]},"parent_tool_use_id":null}`,
		se("m1", `{"type":"content_block_stop","index":0}`),
		se("m1", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t","name":"read","input":{}}}`),
		se("m1", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{}"}}`),
		se("m1", `{"type":"content_block_stop","index":1}`),
		se("m1", `{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":3}}`),
		se("m1", `{"type":"message_stop"}`),
		`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"no such tool","is_error":true}]},"parent_tool_use_id":null}`,
		se("m2", `{"type":"message_start","message":{"id":"m2","usage":{"input_tokens":4}}}`),
		se("m2", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`),
		se("m2", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"done"}}`),
		se("m2", `{"type":"content_block_stop","index":0}`),
		se("m2", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":6}}`),
		okResult,
	)
	want := []string{
		"message in=11", "start 0 text", `delta 0 text_delta "calling"`, "stop 0", "stop_reason tool_use",
		"message in=4", "start 1 text", `delta 1 text_delta "done"`, "stop 1", "stop_reason end_turn",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if res.Failure != nil || res.StopReason != "end_turn" || res.Usage.InputTokens != 15 || res.Usage.CacheReadInputTokens != 2 || res.SessionID != "s1" {
		t.Fatalf("result = %+v", res)
	}
}

// A broken stream: the begun blocks are abandoned, and the CLI's
// non-streaming retry arrives only as assistant lines, which are replayed.
func TestBrokenStreamIsAbandonedAndFallbackReplayed(t *testing.T) {
	got, res := play(t,
		se("m1", `{"type":"message_start","message":{"id":"m1","usage":{"input_tokens":0}}}`),
		se("m1", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`),
		se("m1", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}`),
		se("m1", `{"type":"content_block_stop","index":0}`),
		`{"type":"stream_event","event":{"type":"message_stop"},"api_message_id":"m1","parent_tool_use_id":null,"abandoned_blocks":{"api_message_id":"m1","from_block_index":0}}`,
		`{"type":"assistant","message":{"id":"m2","content":[{"type":"thinking","thinking":"hmm","signature":"sig"}],"stop_reason":"end_turn"},"parent_tool_use_id":null}`,
		`{"type":"assistant","message":{"id":"m2","content":[{"type":"text","text":"Hello again"}],"stop_reason":"end_turn"},"parent_tool_use_id":null}`,
		okResult,
	)
	want := []string{
		"message in=0", "start 0 text", `delta 0 text_delta "Hel"`, "stop 0", "abandon 0",
		"start 1 thinking", `delta 1 thinking_delta ""`, `delta 1 signature_delta ""`, "stop 1",
		"start 2 text", `delta 2 text_delta "Hello again"`, "stop 2", "stop_reason end_turn",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if res.Failure != nil {
		t.Fatalf("failure %+v", res.Failure)
	}
}

func TestSubagentTrafficIsNotTheAnswer(t *testing.T) {
	got, _ := play(t,
		`{"type":"stream_event","event":{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}},"api_message_id":"x","parent_tool_use_id":"toolu_task"}`,
		okResult)
	if len(got) != 0 {
		t.Fatalf("subagent events relayed: %q", got)
	}
}

func TestAPIErrorsBecomeFailures(t *testing.T) {
	reset := time.Date(2026, 11, 29, 22, 38, 0, 0, time.UTC).Unix()
	cases := []struct {
		name   string
		lines  []string
		kind   backend.FailureKind
		status int
		check  func(*backend.Failure) bool
	}{
		{"rate limited after a retry", []string{
			`{"type":"system","subtype":"api_retry","attempt":1,"max_retries":1,"retry_delay_ms":3150,"error_status":429,"error":"rate_limit"}`,
			`{"type":"assistant","message":{"id":"x","model":"<synthetic>","content":[{"type":"text","text":"API Error: Request rejected (429)"}]},"parent_tool_use_id":null,"error":"rate_limit","is_api_error_message":true,"api_error_status":429,"api_error_type":"rate_limit_error"}`,
			`{"type":"result","subtype":"success","is_error":true,"terminal_reason":"api_error","api_error_status":429,"api_error_type":"rate_limit_error","result":"API Error: Request rejected (429)","session_id":"s"}`,
		}, backend.FailUpstream, 429, func(f *backend.Failure) bool {
			return f.RetryDelay == 3150*time.Millisecond && f.Type == "rate_limit_error"
		}},
		{"subscription window", []string{
			fmt.Sprintf(`{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":%d,"rateLimitType":"five_hour"}}`, reset),
			fmt.Sprintf(`{"type":"assistant","message":{"id":"x","content":[]},"parent_tool_use_id":null,"is_api_error_message":true,"api_error_status":429,"api_error_params":{"rate_limit_info":{"status":"rejected","resetsAt":%d}}}`, reset),
			`{"type":"result","subtype":"success","is_error":true,"terminal_reason":"api_error","api_error_status":429,"result":"You've hit your 5-hour limit"}`,
		}, backend.FailUpstream, 429, func(f *backend.Failure) bool { return f.ResetsAt.Unix() == reset }},
		{"prompt too long", []string{
			`{"type":"result","subtype":"success","is_error":true,"terminal_reason":"prompt_too_long","api_error_status":400,"result":"Prompt is too long"}`,
		}, backend.FailPromptTooLong, 400, nil},
		{"connection refused", []string{
			`{"type":"result","subtype":"success","is_error":true,"terminal_reason":"api_error","api_error_status":null,"result":"API Error: Connection refused"}`,
		}, backend.FailUpstream, 0, nil},
		{"max turns", []string{
			`{"type":"result","subtype":"error_max_turns","is_error":true,"terminal_reason":"max_turns","errors":["Reached maximum number of turns (2)"]}`,
		}, backend.FailLimit, 0, func(f *backend.Failure) bool { return strings.Contains(f.Message, "maximum number of turns") }},
		{"execution error", []string{
			`{"type":"result","subtype":"error_during_execution","is_error":true,"errors":["No conversation found with session ID: x"]}`,
		}, backend.FailBackend, 0, func(f *backend.Failure) bool { return strings.Contains(f.Message, "No conversation found") }},
	}
	for _, c := range cases {
		_, res := play(t, c.lines...)
		f := res.Failure
		if f == nil || f.Kind != c.kind || f.Status != c.status || (c.check != nil && !c.check(f)) {
			t.Errorf("%s: failure = %+v", c.name, f)
		}
	}
}

func TestGuardSlashCommand(t *testing.T) {
	raw := func(s string) json.RawMessage { return textBlock(s) }
	cases := []struct {
		in   []json.RawMessage
		want []string
	}{
		{[]json.RawMessage{raw("/compact")}, []string{"/", "compact"}},
		{[]json.RawMessage{raw("please"), raw("\n /context now")}, []string{"please", "\n /", "context now"}},
		{[]json.RawMessage{raw("/")}, []string{"/"}},
		{[]json.RawMessage{raw("/compact"), raw("later")}, []string{"/compact", "later"}},
		{[]json.RawMessage{raw("a/b")}, []string{"a/b"}},
	}
	for _, c := range cases {
		var got []string
		for _, b := range guardSlashCommand(c.in) {
			var v struct{ Text string }
			_ = json.Unmarshal(b, &v)
			got = append(got, v.Text)
		}
		if strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("got %q, want %q", got, c.want)
		}
	}
}

func TestArgsAndEnv(t *testing.T) {
	args := strings.Join(Args(backend.StartOptions{Model: "opus", Thinking: backend.Thinking{Mode: backend.ThinkingEnabled, Budget: 2048}, Effort: "low"}), " ")
	for _, want := range []string{"--input-format=stream-json", "--include-partial-messages", "--permission-prompt-tool=stdio",
		"--setting-sources=", "--tools=", "--model=opus", "--max-thinking-tokens=2048", "--effort=low", "--disable-slash-commands", "--strict-mcp-config"} {
		if !strings.Contains(args, want) {
			t.Errorf("args lack %s: %s", want, args)
		}
	}
	if !strings.Contains(strings.Join(Args(backend.StartOptions{}), " "), "--thinking=disabled") {
		t.Error("thinking is not off by default")
	}

	d := New(Config{SelfAddr: "127.0.0.1:3456", Env: []string{
		"PATH=/bin", "ANTHROPIC_BASE_URL=http://localhost:3456", "NODE_OPTIONS=--inspect", "CLAUDE_CODE_MAX_OUTPUT_TOKENS=5",
		"MERIDIAN_API_KEY=gateway-secret",
	}})
	env := strings.Join(d.env(backend.StartOptions{MaxOutputTokens: 77}), " ")
	for _, want := range []string{"PATH=/bin", "CLAUDE_CODE_ENTRYPOINT=sdk-go", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "CLAUDE_CODE_MAX_OUTPUT_TOKENS=77",
		"BUN_IDLE_GC_SECONDS=0"} {
		if !strings.Contains(env, want) {
			t.Errorf("env lacks %s: %s", want, env)
		}
	}
	for _, banned := range []string{"ANTHROPIC_BASE_URL", "NODE_OPTIONS", "MAX_OUTPUT_TOKENS=5", "gateway-secret"} {
		if strings.Contains(env, banned) {
			t.Errorf("env keeps %s: %s", banned, env)
		}
	}
	other := New(Config{SelfAddr: "127.0.0.1:3456", Env: []string{"ANTHROPIC_BASE_URL=http://127.0.0.1:9999", "BUN_IDLE_GC_SECONDS=10,110"}})
	otherEnv := other.env(backend.StartOptions{})
	if !slices.Contains(otherEnv, "ANTHROPIC_BASE_URL=http://127.0.0.1:9999") {
		t.Error("a base URL pointing elsewhere was dropped")
	}
	if slices.Contains(otherEnv, "BUN_IDLE_GC_SECONDS=0") || !slices.Contains(otherEnv, "BUN_IDLE_GC_SECONDS=10,110") {
		t.Errorf("the user's idle collections were not kept: %s", otherEnv)
	}
	// A new CLI settles before a first freeze only when its idle
	// collections are on.
	if got := (&Process{d: d}).Settle(); got != 0 {
		t.Errorf("settles %v with the idle collections off", got)
	}
	if got := (&Process{d: other}).Settle(); got != settleAfterStart {
		t.Errorf("settles %v with the user's idle collections on", got)
	}
}

// Malformed block indices — negative, or absurdly large — are ignored,
// never a panic and never a huge allocation.
func TestMalformedBlockIndicesAreIgnored(t *testing.T) {
	got, res := play(t,
		se("m1", `{"type":"message_start","message":{"id":"m1","usage":{"input_tokens":3}}}`),
		se("m1", `{"type":"content_block_start","index":-1,"content_block":{"type":"text","text":""}}`),
		se("m1", `{"type":"content_block_delta","index":-1,"delta":{"type":"text_delta","text":"x"}}`),
		se("m1", `{"type":"content_block_stop","index":-1}`),
		se("m1", `{"type":"content_block_start","index":2000000000,"content_block":{"type":"text","text":""}}`),
		se("m1", `{"type":"content_block_stop","index":2000000000}`),
		se("m1", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`),
		se("m1", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ok"}}`),
		se("m1", `{"type":"content_block_stop","index":0}`),
		okResult,
	)
	if strings.Join(got, "|") != `message in=3|start 0 text|delta 0 text_delta "ok"|stop 0` || res == nil || res.Failure != nil {
		t.Fatalf("got %q, result %+v", got, res)
	}
}

// A failed result with no message says what it can, never a sentence
// that trails off.
func TestBareFailuresSayWhatHappened(t *testing.T) {
	for line, want := range map[string]string{
		`{"type":"result","subtype":"success","is_error":true}`:                                       "without giving a reason",
		`{"type":"result","subtype":"error_during_execution","is_error":true}`:                        "without an answer: error_during_execution",
		`{"type":"result","subtype":"error_max_turns","is_error":true,"terminal_reason":"max_turns"}`: "error_max_turns, terminal reason max_turns",
		`{"type":"result","is_error":true}`:                                                           "without giving a reason",
	} {
		_, res := play(t, line)
		if res == nil || res.Failure == nil || !strings.Contains(res.Failure.Message, want) || strings.HasSuffix(res.Failure.Message, "with ") {
			t.Errorf("%s → %+v, want a message with %q", line, res.Failure, want)
		}
	}
}

// A rate_limit_event's unifiedWindows carry every window's share used and
// reset (the top-level utilization only comes with a warning): each one
// reaches the event. The line is the pinned CLI's, recorded.
func TestRateLimitEventCarriesEveryWindow(t *testing.T) {
	got := rateLimitEvent(t, `{"type":"rate_limit_event","rate_limit_info":{"status":"allowed","resetsAt":1796415834,"rateLimitType":"five_hour","isUsingOverage":false,"unifiedWindows":{"five_hour":{"utilization":0.2,"resetsAt":1796415834,"status":"allowed"},"seven_day":{"utilization":0.05,"resetsAt":1796500000,"status":"allowed"}}},"uuid":"84274dd0-58c2-4993-bddc-dc001b17dc7c","session_id":"753344b4-0403-4d4d-8346-6364c0eec2ac"}`)
	want := []backend.LimitWindow{
		{Type: "five_hour", Status: "allowed", Utilization: 0.2, ResetsAt: time.Unix(1796415834, 0)},
		{Type: "seven_day", Status: "allowed", Utilization: 0.05, ResetsAt: time.Unix(1796500000, 0)},
	}
	if got.LimitType != "five_hour" || got.Utilization != 0 || !slices.EqualFunc(got.Windows, want, func(a, b backend.LimitWindow) bool {
		return a.Type == b.Type && a.Status == b.Status && a.Utilization == b.Utilization && a.ResetsAt.Equal(b.ResetsAt)
	}) {
		t.Fatalf("event %+v", got)
	}
}

// A request the upstream served from paid extra usage says so: the line is
// the pinned CLI's, recorded with the API's overage headers (5-hour window
// rejected, overage allowed).
func TestRateLimitEventSaysExtraUsage(t *testing.T) {
	if got := rateLimitEvent(t, `{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1796487440,"rateLimitType":"five_hour","overageStatus":"allowed","overageResetsAt":1796487440,"isUsingOverage":true,"unifiedWindows":{"five_hour":{"utilization":1,"resetsAt":1796487440,"status":"rejected"},"seven_day":{"utilization":0.5,"resetsAt":1796487440,"status":"allowed"}}},"uuid":"4146630f-4c63-41ac-9337-bfa7fcb20e03","session_id":"badcc907-17d0-40d2-908f-7bf34d130d60"}`); !got.Overage || got.LimitStatus != "rejected" {
		t.Fatalf("event %+v", got)
	}
}

// rateLimitEvent is the RateLimit event a rate_limit_event line becomes.
func rateLimitEvent(t *testing.T, raw string) *backend.Event {
	t.Helper()
	var got *backend.Event
	tr := newTranslator(func(ev *backend.Event) error {
		if ev.Kind == backend.RateLimit {
			cp := *ev
			got = &cp
		}
		return nil
	}, nil)
	var ln line
	if err := json.Unmarshal([]byte(raw), &ln); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.handle(&ln); err != nil || got == nil {
		t.Fatalf("no rate-limit event: %v", err)
	}
	return got
}
