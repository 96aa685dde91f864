package agy_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/meridian-gw/meridian/internal/backend"
	"github.com/meridian-gw/meridian/internal/backend/agy"
	"github.com/meridian-gw/meridian/internal/testkit"
)

// gateEnv makes this test binary the gate hook: TestMain runs agy.RunGate
// instead of the tests when it is set, as `meridian agy-gate` does.
const gateEnv = "MERIDIAN_TEST_AGY_GATE"

// Every session's process is joined, and with it every goroutine that
// read its pipes or served its tools.
func TestMain(m *testing.M) {
	if os.Getenv(gateEnv) == "1" {
		run := agy.RunGate
		if slices.Contains(os.Args[1:], "--steer") {
			run = agy.RunSteer
		}
		os.Exit(run(context.Background(), ".", os.Stdin, os.Stdout))
	}
	goleak.VerifyTestMain(m)
}

// toolStand is the driver over the stand-in with its tools endpoint
// served, as the gateway serves it on its listener.
func toolStand(t *testing.T, scenario map[string]any, adjust ...func(*agy.Config)) (*stand, *httptest.Server) {
	t.Helper()
	path, env, calls := testkit.FakeAgy(t, scenario)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	eps := agy.NewEndpoints(nil)
	mux.Handle("/agy-tools/", http.StripPrefix("/agy-tools", eps))
	eps.SetBase(srv.URL + "/agy-tools")
	cfg := agy.Config{Path: path, Env: env, SessionRoot: t.TempDir(), ExitGrace: 500 * time.Millisecond, KillGrace: 500 * time.Millisecond,
		Endpoints: eps, GateCommand: gateEnv + "=1 '" + exe + "'"}
	for _, f := range adjust {
		f(&cfg)
	}
	d := agy.New(cfg)
	return &stand{d: d, calls: calls, dir: t.TempDir()}, srv
}

func mcpCall(tool string, args any) map[string]any {
	return map[string]any{"type": "tool", "tool": "call_mcp_tool",
		"params": map[string]any{"ServerName": "meridian", "ToolName": tool, "Arguments": args}}
}

var lookupTool = backend.Tool{Name: "lookup", Description: "Looks a word up.",
	InputSchema: json.RawMessage(`{"type":"object","properties":{"word":{"type":"string"}},"required":["word"]}`)}

// pauser records a turn's events and pauses it at the first tool call,
// as the gateway does.
type pauser struct {
	collector
	calls []struct{ id, name, input string }
	input strings.Builder
}

func (p *pauser) emit(ev *backend.Event) error {
	_ = p.collector.emit(ev)
	switch ev.Kind {
	case backend.BlockStart:
		if ev.BlockType == "tool_use" {
			var b struct{ ID, Name string }
			_ = json.Unmarshal(ev.Block, &b)
			p.calls = append(p.calls, struct{ id, name, input string }{id: b.ID, name: b.Name})
			p.input.Reset()
		}
	case backend.BlockDelta:
		if ev.DeltaType == "input_json_delta" {
			var d struct {
				PartialJSON string `json:"partial_json"`
			}
			_ = json.Unmarshal(ev.Delta, &d)
			p.input.WriteString(d.PartialJSON)
		}
	case backend.BlockStop:
		if n := len(p.calls); n > 0 && p.calls[n-1].input == "" && p.input.Len() > 0 {
			p.calls[n-1].input = p.input.String()
			p.input.Reset()
		}
	case backend.MessageDelta:
		if ev.StopReason == "tool_use" {
			return backend.ErrPause
		}
	}
	return nil
}

func result(id, text string) backend.Input {
	b, _ := json.Marshal(map[string]string{"type": "text", "text": text})
	return backend.Input{Results: []backend.ToolResult{{ToolUseID: id, Content: []json.RawMessage{b}}}}
}

// A client tool loop of three calls through the session's MCP server:
// each call pauses the turn with a tool_use block naming the client's tool
// and carrying agy's arguments; each result reaches the stand-in, whose
// final answer quotes the last one.
func TestClientToolLoop(t *testing.T) {
	t.Parallel()
	s, _ := toolStand(t, map[string]any{"turns": []map[string]any{{"steps": []any{
		answer("Let me look.\n", 10, 4),
		mcpCall("lookup", map[string]string{"word": "one"}),
		mcpCall("lookup", map[string]string{"word": "two"}),
		answer("", 12, 2),
		mcpCall("lookup", map[string]string{"word": "three"}),
		answer("Found: {{tool_output}}\n", 30, 6),
	}}}})
	sess := s.start(t, backend.StartOptions{Tools: []backend.Tool{lookupTool}})
	var p pauser
	res, err := sess.Turn(context.Background(), text("look up three words"), p.emit)
	if err != nil || !res.Paused || len(p.calls) != 1 {
		t.Fatalf("first response: %v %+v %+v", err, res, p.calls)
	}
	if p.text.String() != "Let me look.\n" || p.calls[0].name != "lookup" || p.calls[0].input != `{"word":"one"}` {
		t.Fatalf("first response: %q %+v", p.text.String(), p.calls[0])
	}
	for i, word := range []string{"two", "three"} {
		prev := p.calls[len(p.calls)-1]
		p.text.Reset()
		res, err = sess.Turn(context.Background(), result(prev.id, "meaning of "+prev.input), p.emit)
		if err != nil || !res.Paused || len(p.calls) != i+2 {
			t.Fatalf("response %d: %v %+v %+v", i+2, err, res, p.calls)
		}
		if got := p.calls[i+1]; got.input != `{"word":"`+word+`"}` || got.id == prev.id {
			t.Fatalf("call %d: %+v", i+2, got)
		}
	}
	p.text.Reset()
	last := p.calls[2]
	res, err = sess.Turn(context.Background(), result(last.id, "3 is three"), p.emit)
	if err != nil || res.Paused || res.Failure != nil {
		t.Fatalf("last response: %v %+v", err, res)
	}
	if got := p.text.String(); got != "Found: 3 is three\n" {
		t.Fatalf("final answer %q", got)
	}
	// What the stand-in's MCP client saw: one connection, three calls
	// with the model's arguments and the client's results.
	var outputs []string
	for _, c := range s.calls() {
		if c["mcp"] == "connect" && c["err"] != nil {
			t.Fatalf("MCP connect: %v", c["err"])
		}
		if c["mcp"] == "call" {
			outputs = append(outputs, c["output"].(string))
		}
	}
	want := []string{`meaning of {"word":"one"}`, `meaning of {"word":"two"}`, "3 is three"}
	if strings.Join(outputs, "|") != strings.Join(want, "|") {
		t.Fatalf("the stand-in got %q, want %q", outputs, want)
	}
	// agy ran with its prompts skipped: the gate is what decided.
	for _, c := range s.calls() {
		if argv := jsonOf(c["argv"]); strings.Contains(argv, "--input-format") && !strings.Contains(argv, "--dangerously-skip-permissions") {
			t.Fatalf("argv %v", argv)
		}
	}
}

// The gate lets through only call_mcp_tool to this session's server for
// a tool its client offered; agy's own tools, other servers and unknown
// tools are denied with a reason the model reads, and the turn goes on.
func TestGateAllowsOnlyTheClientsTools(t *testing.T) {
	t.Parallel()
	s, _ := toolStand(t, map[string]any{"turns": []map[string]any{{"steps": []any{
		map[string]any{"type": "tool", "tool": "run_command", "params": map[string]string{"CommandLine": "rm -rf ~"}, "output": "gone"},
		map[string]any{"type": "tool", "tool": "call_mcp_tool", "params": map[string]any{"ServerName": "elsewhere", "ToolName": "lookup", "Arguments": map[string]any{}}, "output": "x"},
		mcpCall("format_disk", map[string]any{}),
		answer("Nothing ran.\n", 10, 3),
	}}}})
	sess := s.start(t, backend.StartOptions{Tools: []backend.Tool{lookupTool}})
	var p pauser
	res, err := sess.Turn(context.Background(), text("go"), p.emit)
	if err != nil || res.Paused || res.Failure != nil || len(p.calls) != 0 || p.text.String() != "Nothing ran.\n" {
		t.Fatalf("%v %+v calls %+v text %q", err, res, p.calls, p.text.String())
	}
	var reasons []string
	for _, c := range s.calls() {
		if c["hook"] == "meridian-gate" && c["event"] == "PreToolUse" {
			reasons = append(reasons, c["stdout"].(string))
		}
		if c["mcp"] != nil {
			t.Fatalf("the MCP server was called: %v", c)
		}
	}
	if len(reasons) != 3 {
		t.Fatalf("gate answers %q", reasons)
	}
	for i, want := range []string{"run_command is not one of them", `\"elsewhere\" is not this session's`, `no tool named \"format_disk\"`} {
		if !strings.Contains(reasons[i], `"decision":"deny"`) || !strings.Contains(reasons[i], want) {
			t.Fatalf("gate answer %d: %s (want %s)", i, reasons[i], want)
		}
	}
}

// A gate whose endpoint is gone denies: with the gateway's listener
// closed, the client's own tool is refused too, and nothing is called.
func TestGateFailsClosed(t *testing.T) {
	t.Parallel()
	s, srv := toolStand(t, map[string]any{"turns": []map[string]any{{"steps": []any{
		mcpCall("lookup", map[string]string{"word": "one"}),
		answer("No tools today.\n", 10, 3),
	}}}})
	sess := s.start(t, backend.StartOptions{Tools: []backend.Tool{lookupTool}})
	srv.Close()
	var p pauser
	res, err := sess.Turn(context.Background(), text("go"), p.emit)
	if err != nil || res.Paused || len(p.calls) != 0 || p.text.String() != "No tools today.\n" {
		t.Fatalf("%v %+v calls %+v text %q", err, res, p.calls, p.text.String())
	}
	denied := false
	for _, c := range s.calls() {
		if c["hook"] == "meridian-gate" && c["event"] == "PreToolUse" {
			out := c["stdout"].(string)
			denied = strings.Contains(out, `"decision":"deny"`) && strings.Contains(out, "could not be reached")
			if strings.Contains(out, "127.0.0.1") || strings.Contains(out, "/agy-tools") {
				t.Fatalf("the deny names an address: %s", out)
			}
		}
		if c["mcp"] != nil {
			t.Fatalf("the MCP server was called: %v", c)
		}
	}
	if !denied {
		t.Fatalf("the gate did not deny: %v", s.calls())
	}
}

// A gate with no gate.json, or a hook that cannot run at all, denies too.
func TestGateWithoutItsFileDenies(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	if code := agy.RunGate(context.Background(), t.TempDir(), strings.NewReader(`{"toolCall":{"name":"call_mcp_tool"}}`), &out); code != 0 ||
		!strings.Contains(out.String(), `"decision":"deny"`) {
		t.Fatalf("%d %s", code, out.String())
	}
}

// A call whose arguments the gateway refuses is answered at once, without
// a pause, and the turn goes on; closing a session paused on a call ends
// agy at once and releases the held request.
func TestAnsweredInTurnAndClosedWhilePaused(t *testing.T) {
	t.Parallel()
	s, _ := toolStand(t, map[string]any{"turns": []map[string]any{{"steps": []any{
		mcpCall("lookup", map[string]any{"word": 7}),
		mcpCall("lookup", map[string]string{"word": "seven"}),
		answer("never\n", 1, 1),
	}}}}, func(c *agy.Config) { c.ExitGrace, c.KillGrace = time.Minute, time.Minute })
	sess := s.start(t, backend.StartOptions{Tools: []backend.Tool{lookupTool}})
	var p pauser
	answered := false
	emit := func(ev *backend.Event) error {
		if ev.Kind == backend.MessageDelta && ev.StopReason == "tool_use" && !answered {
			answered = true
			_ = p.emit(ev)
			return sess.Answer(backend.ToolResult{ToolUseID: p.calls[0].id, IsError: true,
				Content: []json.RawMessage{json.RawMessage(`{"type":"text","text":"word must be a string"}`)}})
		}
		return p.emit(ev)
	}
	res, err := sess.Turn(context.Background(), text("go"), emit)
	if err != nil || !res.Paused || len(p.calls) != 2 || p.calls[1].input != `{"word":"seven"}` {
		t.Fatalf("%v %+v %+v", err, res, p.calls)
	}
	began := time.Now()
	if err := sess.Close(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(began); took > 30*time.Second {
		t.Fatalf("closing a paused session took %v: it waited out the minute's exit grace", took)
	}
	if err := sess.Answer(backend.ToolResult{ToolUseID: p.calls[1].id}); err == nil {
		t.Fatal("a closed session took a result")
	}
	var first string
	for _, c := range s.calls() {
		if c["mcp"] == "call" && first == "" {
			first = c["output"].(string)
		}
	}
	if first != "word must be a string" {
		t.Fatalf("the refused call's answer: %q", first)
	}
}

// Steering the client sends beside its tool results reaches the model
// beside them, as a user message before its next call (agy's
// PreInvocation hook injects it), never inside the tool's output.
func TestSteeringBesideResultsIsAUserMessage(t *testing.T) {
	t.Parallel()
	s, _ := toolStand(t, map[string]any{"turns": []map[string]any{{"steps": []any{
		mcpCall("lookup", map[string]string{"word": "one"}),
		answer("output [{{tool_output}}] steer [{{steer}}]\n", 30, 6),
	}}}})
	sess := s.start(t, backend.StartOptions{Tools: []backend.Tool{lookupTool}})
	var p pauser
	res, err := sess.Turn(context.Background(), text("look it up"), p.emit)
	if err != nil || !res.Paused || len(p.calls) != 1 {
		t.Fatalf("first response: %v %+v", err, res)
	}
	in := result(p.calls[0].id, "one means 1")
	in.Content = text("and answer in French").Content
	p.text.Reset()
	res, err = sess.Turn(context.Background(), in, p.emit)
	if err != nil || res.Failure != nil {
		t.Fatalf("the steered response: %v %+v", err, res)
	}
	if got := p.text.String(); got != "output [one means 1] steer [and answer in French]\n" {
		t.Fatalf("the model saw %q", got)
	}
}
