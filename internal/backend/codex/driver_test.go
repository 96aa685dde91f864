package codex

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/backend"
	"github.com/meridian-gw/meridian/internal/backend/toolhost"
	"github.com/meridian-gw/meridian/internal/codexschema"
	"github.com/meridian-gw/meridian/internal/testkit"
)

// rig is a driver on the pinned codex whose only provider is a fake
// Responses upstream, its client tools mounted on a loopback server, and
// every protocol line checked against the recorded protocol.
type rig struct {
	d     *Driver
	up    *testkit.ResponsesUpstream
	home  string
	trace *codexschema.Trace
}

func newRig(t *testing.T) *rig {
	t.Helper()
	path := testkit.CodexPath(t)
	proto, err := codexschema.Load()
	if err != nil {
		t.Fatal(err)
	}
	up := testkit.NewResponsesUpstream(t, "unused")
	rg := &rig{up: up, trace: codexschema.NewTrace(proto), home: testkit.CodexHome(t, up.URL, "gpt-test")}
	tools := toolhost.NewRegistry()
	mux := http.NewServeMux()
	mux.HandleFunc("/{token}/mcp", func(w http.ResponseWriter, r *http.Request) { tools.ServeMCP(w, r, r.PathValue("token")) })
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	tools.SetBase(srv.URL)
	rg.d = New(Config{Path: path, Env: []string{"HOME=" + t.TempDir(), "CODEX_HOME=" + rg.home, "PATH=" + os.Getenv("PATH")},
		SessionRoot: t.TempDir(), Tools: tools, Trace: rg.trace.Line, Logger: slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	t.Cleanup(func() {
		for _, b := range rg.trace.Problems() {
			t.Errorf("off the recorded protocol: %s", b)
		}
	})
	return rg
}

func (rg *rig) start(t *testing.T, opts backend.StartOptions) backend.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := rg.d.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// collected is what a turn emitted.
type collected struct {
	text   strings.Builder
	calls  []map[string]any
	events []backend.EventKind
	stop   string
}

// pauseOnTools collects a turn's events and pauses it at its tool calls.
func (c *collected) emit(ev *backend.Event) error {
	c.events = append(c.events, ev.Kind)
	switch ev.Kind {
	case backend.BlockDelta:
		c.text.WriteString(ev.Text)
		if ev.DeltaType == "input_json_delta" {
			var d struct {
				PartialJSON string `json:"partial_json"`
			}
			_ = json.Unmarshal(ev.Delta, &d)
			c.calls[len(c.calls)-1]["input"] = d.PartialJSON
		}
	case backend.BlockStart:
		if ev.BlockType == "tool_use" {
			var b map[string]any
			_ = json.Unmarshal(ev.Block, &b)
			c.calls = append(c.calls, b)
		}
	case backend.MessageDelta:
		c.stop = ev.StopReason
		if ev.StopReason == "tool_use" {
			return backend.ErrPause
		}
	}
	return nil
}

func turn(t *testing.T, s backend.Session, in backend.Input) (*backend.Result, *collected) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := &collected{}
	res, err := s.Turn(ctx, in, c.emit)
	if err != nil {
		t.Fatalf("turn: %v", err)
	}
	if res.Failure != nil {
		t.Fatalf("turn failed: %+v", res.Failure)
	}
	return res, c
}

func text(s string) backend.Input {
	b, _ := json.Marshal(map[string]string{"type": "text", "text": s})
	return backend.Input{Content: []json.RawMessage{b}}
}

// inputOf is an upstream request's input as JSON text.
func inputOf(req map[string]any) string {
	b, _ := json.Marshal(req["input"])
	return string(b)
}

// Three turns on one live codex: each answer streams as text deltas; the
// later turns run in the same process with the earlier ones in their
// history; the model sees the client's system prompt as its only
// instructions and none of codex's own tools.
func TestTurnsOnOneProcess(t *testing.T) {
	rg := newRig(t)
	rg.up.Script = func(n int, _ map[string]any) testkit.ResponsesReply {
		return testkit.ResponsesReply{Text: []string{"answer", fmt.Sprintf(" %d", n)}}
	}
	s := rg.start(t, backend.StartOptions{Model: "gpt-test", System: []string{"You are terse."}})
	pid := s.(backend.Processor).Pid()
	for i := 1; i <= 3; i++ {
		res, c := turn(t, s, text(fmt.Sprintf("question %d", i)))
		if want := fmt.Sprintf("answer %d", i); c.text.String() != want || res.Text != want {
			t.Fatalf("turn %d: streamed %q, result %q", i, c.text.String(), res.Text)
		}
		if res.Usage.InputTokens != 10*i || res.Usage.OutputTokens != 2 {
			t.Errorf("turn %d usage: %+v", i, res.Usage)
		}
		if got := s.(backend.Processor).Pid(); got != pid {
			t.Fatalf("turn %d ran in process %d, not %d", i, got, pid)
		}
		if res.Pin != fmt.Sprintf("%s#%d", s.ID(), i) {
			t.Errorf("pin %q", res.Pin)
		}
	}
	reqs := rg.up.Requests()
	third := inputOf(reqs[2])
	for _, want := range []string{"question 1", "answer 1", "question 2", "answer 2", "question 3", "You are terse."} {
		if !strings.Contains(third, want) {
			t.Errorf("the third request lacks %q: %s", want, third)
		}
	}
	for _, unwanted := range []string{"environment_context", "permissions instructions", "skills_instructions"} {
		if strings.Contains(third, unwanted) {
			t.Errorf("codex's own %s reached the model", unwanted)
		}
	}
	tools, _ := json.Marshal(reqs[2]["tools"])
	for _, builtin := range []string{"exec_command", "apply_patch", "view_image", "web_search", "spawn_agent", "shell"} {
		if strings.Contains(string(tools), `"`+builtin+`"`) {
			t.Errorf("codex offered its own %s: %s", builtin, tools)
		}
	}
}

// A client tool call: the model's call reaches the client as a tool_use
// and pauses the turn; the result continues it on the same thread and
// reaches the model as the call's output.
func TestClientToolRoundTrip(t *testing.T) {
	rg := newRig(t)
	rg.up.Script = func(n int, _ map[string]any) testkit.ResponsesReply {
		if n == 1 {
			return testkit.ResponsesReply{Text: []string{"Looking it up."},
				Calls: []testkit.ResponsesCall{{Name: "get_weather", Namespace: "mcp__meridian", Arguments: `{"city":"Paris"}`}}}
		}
		return testkit.ResponsesReply{Text: []string{"It is sunny."}}
	}
	s := rg.start(t, backend.StartOptions{Model: "gpt-test", Tools: []backend.Tool{{Name: "get_weather", Description: "the weather",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)}}})
	res, c := turn(t, s, text("weather in Paris?"))
	if !res.Paused || len(c.calls) != 1 || c.calls[0]["name"] != "get_weather" || c.calls[0]["input"] != `{"city":"Paris"}` {
		t.Fatalf("paused %v, calls %v", res.Paused, c.calls)
	}
	if c.text.String() != "Looking it up." {
		t.Fatalf("text before the call: %q", c.text.String())
	}
	id := c.calls[0]["id"].(string)
	out, _ := json.Marshal(map[string]string{"type": "text", "text": "sunny, 24C"})
	res, c = turn(t, s, backend.Input{Results: []backend.ToolResult{{ToolUseID: id, Content: []json.RawMessage{out}}}})
	if res.Paused || c.text.String() != "It is sunny." {
		t.Fatalf("after the result: paused %v, %q", res.Paused, c.text.String())
	}
	reqs := rg.up.Requests()
	if len(reqs) != 2 || !strings.Contains(inputOf(reqs[1]), "sunny, 24C") {
		t.Fatalf("the model did not get the result: %d requests, %s", len(reqs), inputOf(reqs[len(reqs)-1]))
	}
}

// A command codex would run on this machine never runs: its tool is not
// offered, and a model that calls it anyway gets an error back.
func TestBuiltinCommandNeverRuns(t *testing.T) {
	rg := newRig(t)
	marker := filepath.Join(t.TempDir(), "marker")
	cmd, _ := json.Marshal(map[string]string{"cmd": "touch " + marker})
	rg.up.Script = func(n int, _ map[string]any) testkit.ResponsesReply {
		switch n {
		case 1:
			return testkit.ResponsesReply{Calls: []testkit.ResponsesCall{{Name: "exec_command", Arguments: string(cmd)}}}
		case 2:
			return testkit.ResponsesReply{Calls: []testkit.ResponsesCall{{Name: "shell", Arguments: `{"command":["touch","` + marker + `"]}`}}}
		}
		return testkit.ResponsesReply{Text: []string{"I could not."}}
	}
	s := rg.start(t, backend.StartOptions{Model: "gpt-test"})
	res, c := turn(t, s, text("make a file"))
	if c.text.String() != "I could not." || res.Paused {
		t.Fatalf("answer %q", c.text.String())
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the marker exists: %v", err)
	}
	reqs := rg.up.Requests()
	if len(reqs) != 3 || !strings.Contains(inputOf(reqs[1]), "function_call_output") {
		t.Fatalf("the model was not told: %d requests", len(reqs))
	}
}

// A turn whose client goes away is interrupted: the upstream stream is
// cancelled, and the session takes the next turn.
func TestInterruptOnCancel(t *testing.T) {
	rg := newRig(t)
	hold := make(chan struct{})
	defer close(hold)
	rg.up.Script = func(n int, _ map[string]any) testkit.ResponsesReply {
		if n == 1 {
			return testkit.ResponsesReply{Text: []string{"partial", " never"}, Hold: hold}
		}
		return testkit.ResponsesReply{Text: []string{"fresh"}}
	}
	s := rg.start(t, backend.StartOptions{Model: "gpt-test"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := s.Turn(ctx, text("long one"), func(ev *backend.Event) error {
		if ev.Kind == backend.BlockDelta {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled turn: %v", err)
	}
	if err := testkit.WaitFor(10*time.Second, func() error {
		if rg.up.Cancelled() == 0 {
			return errors.New("the upstream stream was not cancelled")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !s.Alive() {
		t.Fatal("the session died with the interrupt")
	}
	_, c := turn(t, s, text("again"))
	if c.text.String() != "fresh" {
		t.Fatalf("next turn: %q", c.text.String())
	}
}

// kill -9 mid-turn: the turn fails cleanly; a new session resuming the
// thread answers with the earlier turns in its history.
func TestKillAndResume(t *testing.T) {
	rg := newRig(t)
	hold := make(chan struct{})
	defer close(hold)
	rg.up.Script = func(n int, _ map[string]any) testkit.ResponsesReply {
		switch n {
		case 1:
			return testkit.ResponsesReply{Text: []string{"first answer"}}
		case 2:
			return testkit.ResponsesReply{Text: []string{"cut", " off"}, Hold: hold}
		}
		return testkit.ResponsesReply{Text: []string{"resumed"}}
	}
	s := rg.start(t, backend.StartOptions{Model: "gpt-test"})
	res, _ := turn(t, s, text("first question"))
	pin := res.Pin
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := s.Turn(ctx, text("second question"), func(ev *backend.Event) error {
		if ev.Kind == backend.BlockDelta {
			testkit.Kill(s.(backend.Processor).Pid())
		}
		return nil
	})
	if err != nil || res.Failure == nil || res.Failure.Kind != backend.FailBackend || s.Alive() {
		t.Fatalf("killed turn: %v %+v alive %v", err, res, s.Alive())
	}
	_ = s.Close()
	s2 := rg.start(t, backend.StartOptions{Model: "gpt-test", Resume: pin})
	res, c := turn(t, s2, text("third question"))
	if c.text.String() != "resumed" || s2.ID() != s.ID() {
		t.Fatalf("resumed: %q, thread %s vs %s", c.text.String(), s2.ID(), s.ID())
	}
	last := inputOf(rg.up.Requests()[2])
	for _, want := range []string{"first question", "first answer", "third question"} {
		if !strings.Contains(last, want) {
			t.Errorf("the resumed thread lacks %q: %s", want, last)
		}
	}
	_ = res
}

// testWriter logs through t.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}

// The plan's windows codex reads from the upstream's headers reach the
// gateway as RateLimit events; a spent plan is a 429 with its reset.
func TestPlanWindowsAndUsageLimit(t *testing.T) {
	rg := newRig(t)
	resets := time.Now().Add(3 * time.Hour).Truncate(time.Second)
	rg.up.Script = func(n int, _ map[string]any) testkit.ResponsesReply {
		h := http.Header{}
		h.Set("x-codex-primary-used-percent", "42")
		h.Set("x-codex-primary-window-minutes", "300")
		h.Set("x-codex-primary-reset-at", fmt.Sprint(resets.Unix()))
		h.Set("x-codex-secondary-used-percent", "7")
		h.Set("x-codex-secondary-window-minutes", "10080")
		h.Set("x-codex-secondary-reset-at", fmt.Sprint(resets.Add(96*time.Hour).Unix()))
		if n == 1 {
			return testkit.ResponsesReply{Text: []string{"fine"}, Header: h}
		}
		h.Set("x-codex-primary-used-percent", "100")
		return testkit.ResponsesReply{Status: http.StatusTooManyRequests, Header: h,
			Body: fmt.Sprintf(`{"error":{"type":"usage_limit_reached","message":"The usage limit has been reached","plan_type":"plus","resets_at":%d}}`, resets.Unix())}
	}
	s := rg.start(t, backend.StartOptions{Model: "gpt-test"})
	var limits []backend.Event
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := s.Turn(ctx, text("one"), func(ev *backend.Event) error {
		if ev.Kind == backend.RateLimit {
			limits = append(limits, *ev)
		}
		return nil
	})
	if err != nil || res.Failure != nil {
		t.Fatalf("first turn: %v %+v", err, res)
	}
	if len(limits) == 0 {
		t.Fatal("no RateLimit event")
	}
	got := limits[len(limits)-1]
	if len(got.Windows) != 2 || got.Windows[0].Type != "five_hour" || got.Windows[0].Utilization != 0.42 ||
		!got.Windows[0].ResetsAt.Equal(resets) || got.Windows[1].Type != "seven_day" || got.LimitType != "five_hour" {
		t.Fatalf("windows: %+v", got)
	}
	res, err = s.Turn(ctx, text("two"), func(*backend.Event) error { return nil })
	if err != nil || res.Failure == nil {
		t.Fatalf("second turn: %v %+v", err, res)
	}
	if f := res.Failure; f.Status != http.StatusTooManyRequests || f.Type != "rate_limit_error" || !f.ResetsAt.Equal(resets) {
		t.Fatalf("usage limit failure: %+v", f)
	}
}

// An output schema is the turn's outputSchema: the model is asked for it
// upstream, and the answer comes back as the structured value, not as
// streamed text.
func TestOutputSchema(t *testing.T) {
	rg := newRig(t)
	rg.up.Script = func(int, map[string]any) testkit.ResponsesReply {
		return testkit.ResponsesReply{Text: []string{`{"answer":`, `42}`}}
	}
	schema := json.RawMessage(`{"type":"object","properties":{"answer":{"type":"integer"}},"required":["answer"],"additionalProperties":false}`)
	s := rg.start(t, backend.StartOptions{Model: "gpt-test", JSONSchema: schema})
	res, c := turn(t, s, text("the answer?"))
	if string(res.Structured) != `{"answer":42}` || c.text.Len() != 0 {
		t.Fatalf("structured %s, streamed %q", res.Structured, c.text.String())
	}
	format, _ := json.Marshal(rg.up.Requests()[0]["text"])
	if !strings.Contains(string(format), "json_schema") || !strings.Contains(string(format), `"answer"`) {
		t.Fatalf("the upstream was not asked for the schema: %s", format)
	}
}

// An image reaches the model as an image input, a request's effort as
// the model call's reasoning effort, and text sent beside a tool result
// reaches the running turn as steering.
func TestImageEffortAndSteering(t *testing.T) {
	rg := newRig(t)
	rg.up.Script = func(n int, _ map[string]any) testkit.ResponsesReply {
		if n == 1 {
			return testkit.ResponsesReply{Calls: []testkit.ResponsesCall{{Name: "look", Namespace: "mcp__meridian", Arguments: `{}`}}}
		}
		return testkit.ResponsesReply{Text: []string{"seen"}}
	}
	s := rg.start(t, backend.StartOptions{Model: "gpt-test", Effort: "high",
		Tools: []backend.Tool{{Name: "look", InputSchema: json.RawMessage(`{"type":"object"}`)}}})
	const pixel = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
	img, _ := json.Marshal(map[string]any{"type": "image", "source": map[string]string{"type": "base64", "media_type": "image/png", "data": pixel}})
	in := text("what is in this picture?")
	in.Content = append(in.Content, img)
	res, c := turn(t, s, in)
	if !res.Paused || len(c.calls) != 1 {
		t.Fatalf("paused %v, calls %v", res.Paused, c.calls)
	}
	out, _ := json.Marshal(map[string]string{"type": "text", "text": "a red pixel"})
	steer, _ := json.Marshal(map[string]string{"type": "text", "text": "answer in one word"})
	res, c = turn(t, s, backend.Input{Content: []json.RawMessage{steer},
		Results: []backend.ToolResult{{ToolUseID: c.calls[0]["id"].(string), Content: []json.RawMessage{out}}}})
	if res.Paused || c.text.String() != "seen" {
		t.Fatalf("after the result: %q", c.text.String())
	}
	reqs := rg.up.Requests()
	first := inputOf(reqs[0])
	if !strings.Contains(first, `"input_image"`) || !strings.Contains(first, "data:image/png;base64,"+pixel) {
		t.Fatalf("no image upstream: %s", first)
	}
	if effort, _ := json.Marshal(reqs[0]["reasoning"]); !strings.Contains(string(effort), `"effort":"high"`) {
		t.Fatalf("reasoning %s", effort)
	}
	if second := inputOf(reqs[len(reqs)-1]); !strings.Contains(second, "a red pixel") || !strings.Contains(second, "answer in one word") {
		t.Fatalf("the continued turn lacks the result or the steering: %s", second)
	}
}

// A thread codex has no record of (another host's, a cleared home) is a
// stale session: the gateway starts the conversation over with its
// history.
func TestUnknownThreadIsStale(t *testing.T) {
	rg := newRig(t)
	s := rg.start(t, backend.StartOptions{Model: "gpt-test", Resume: "01a24900-0000-7000-8000-000000000000#3"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := s.Turn(ctx, text("go on"), func(*backend.Event) error { return nil })
	if err != nil || res.Failure == nil || res.Failure.Code != backend.CodeStaleSession {
		t.Fatalf("resuming an unknown thread: %v %+v", err, res)
	}
	if n := len(rg.up.Requests()); n != 0 {
		t.Fatalf("the upstream got %d requests", n)
	}
}

// codex starts nothing of its own in a gateway session: no shell to
// snapshot the user's environment (it would source their ~/.bashrc), no
// helper, from its start through a turn.
func TestNoChildProcesses(t *testing.T) {
	rg := newRig(t)
	rg.up.Script = func(int, map[string]any) testkit.ResponsesReply {
		return testkit.ResponsesReply{Text: []string{"fine"}}
	}
	s := rg.start(t, backend.StartOptions{Model: "gpt-test"})
	pid := s.(backend.Processor).Pid()
	children := func() string {
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
		var all string
		for _, f := range tasks {
			b, _ := os.ReadFile(f)
			all += strings.TrimSpace(string(b)) + " "
		}
		return strings.TrimSpace(all)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		turn(t, s, text("hi"))
	}()
	seen := ""
	for watching := true; watching; {
		if c := children(); c != "" {
			seen = c
		}
		select {
		case <-done:
			watching = false
		case <-time.After(10 * time.Millisecond):
		}
	}
	if seen != "" {
		t.Fatalf("codex started processes of its own: %s", seen)
	}
}
