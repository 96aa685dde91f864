package gateway

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/meridian-gw/meridian/internal/anthropic"
	"github.com/meridian-gw/meridian/internal/backend"
)

func TestToolsOfKeepsClientToolsInOrder(t *testing.T) {
	req, err := anthropic.DecodeMessagesRequest([]byte(`{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[
		{"name":"b_tool","input_schema":{"type":"object"}},
		{"type":"web_search_20250305","name":"web_search"},
		{"name":"a_tool","description":"d","input_schema":{"type":"object"},"eager_input_streaming":true},
		{"type":"custom","name":"c_tool","input_schema":{"type":"object"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	ct, ignored := toolsOf(req)
	var names []string
	for _, tl := range ct.list {
		names = append(names, tl.Name)
	}
	if strings.Join(names, ",") != "b_tool,a_tool,c_tool" || strings.Join(ignored, ",") != "web_search" {
		t.Fatalf("tools %v, ignored %v", names, ignored)
	}
	if got := Ignored(req); strings.Join(got, "|") != "tools: web_search" {
		t.Fatalf("reported %q", got)
	}
}

func TestValidateArguments(t *testing.T) {
	ct := &clientTools{schemas: map[string]json.RawMessage{
		"read":   json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"lines":{"type":"integer"}},"required":["path"]}`),
		"remote": json.RawMessage(`{"$ref":"https://schemas.example/never-fetched.json"}`),
		"any":    nil,
	}}
	cases := []struct {
		tool, input string
		ok          bool
	}{
		{"read", `{"path":"a.go"}`, true},
		{"read", `{"path":"a.go","lines":3}`, true},
		{"read", `{"path":5}`, false},
		{"read", `{"lines":3}`, false},
		{"read", `{"path":"a","lines":"3"}`, false}, // no coercion
		{"read", `{broken`, false},
		{"remote", `{"anything":1}`, true}, // not compilable without fetching: the client decides
		{"any", `{"x":1}`, true},
		{"nope", `{}`, false},
	}
	for _, c := range cases {
		if err := ct.validate(c.tool, json.RawMessage(c.input)); (err == nil) != c.ok {
			t.Errorf("%s %s: err = %v", c.tool, c.input, err)
		}
	}
	if ct.broken["remote"] == nil || !strings.Contains(ct.broken["remote"].Error(), "never-fetched") {
		t.Fatalf("remote reference: %v", ct.broken)
	}
}

// A tool call reaches the client only once complete, and a message's
// calls only as a batch whose every call is valid: one invalid call sends
// the whole batch back to the backend, every call answered with every
// invalid call's error; a valid batch reaches the client and pauses the
// turn.
func TestRelayChecksToolCallsAsOneBatch(t *testing.T) {
	use := func(i int, id, input string) []*backend.Event {
		return []*backend.Event{
			{Kind: backend.BlockStart, Index: i, BlockType: "tool_use", Block: json.RawMessage(`{"type":"tool_use","id":"` + id + `","name":"read","input":{}}`)},
			{Kind: backend.BlockDelta, Index: i, DeltaType: "input_json_delta", Delta: mustDelta(input[:len(input)/2])},
			{Kind: backend.BlockDelta, Index: i, DeltaType: "input_json_delta", Delta: mustDelta(input[len(input)/2:])},
			{Kind: backend.BlockStop, Index: i},
		}
	}
	run := func(inputs ...string) (*record, []backend.ToolResult, *relay, error) {
		out := &record{}
		r := newRelay(out, Start{ID: "msg_1", Model: "m"}, &anthropic.MessagesRequest{}, func() string { return "sid" })
		r.tools = &clientTools{schemas: map[string]json.RawMessage{"read": json.RawMessage(`{"type":"object","required":["path"]}`)}}
		var answered []backend.ToolResult
		r.answer = func(res backend.ToolResult) error { answered = append(answered, res); return nil }
		events := []*backend.Event{start(0, "text"), text(0, "calling"), stop(0)}
		for i, in := range inputs {
			events = append(events, use(i+1, fmt.Sprintf("call%d", i+1), in)...)
		}
		for _, ev := range events {
			if err := r.handle(ev); err != nil {
				t.Fatal(err)
			}
		}
		if strings.Contains(strings.Join(out.calls, "\n"), "tool_use") {
			t.Fatal("a call reached the client before its batch ended")
		}
		return out, answered, r, r.handle(&backend.Event{Kind: backend.MessageDelta, StopReason: "tool_use"})
	}

	out, answered, r, err := run(`{"path":"a"}`, `{"x":1}`, `{"path":"b"}`)
	if err != nil {
		t.Fatalf("a refused batch must let the turn go on, got %v", err)
	}
	if got := strings.Join(out.calls, "\n"); strings.Contains(got, "tool_use") {
		t.Fatalf("client saw part of an invalid batch:\n%s", got)
	}
	if len(answered) != 3 || len(r.calls) != 0 {
		t.Fatalf("answered %+v, calls %v", answered, r.calls)
	}
	for i, a := range answered {
		text := string(a.Content[0])
		if a.ToolUseID != fmt.Sprintf("call%d", i+1) || !a.IsError || !strings.Contains(text, "Invalid tool call batch, not run: 1 of the 3") ||
			!strings.Contains(text, "call 2 of 3 (read, id call2)") {
			t.Fatalf("answer %d: %+v %s", i, a, text)
		}
	}

	out, answered, r, err = run(`{"path":"a"}`, `{"path":"b"}`)
	if err != backend.ErrPause {
		t.Fatalf("a valid batch must pause the turn, got %v", err)
	}
	got := strings.Join(out.calls, "\n")
	if len(answered) != 0 || !strings.Contains(got, `block 1 {"type":"tool_use","id":"call1"`) || !strings.Contains(got, `block 2 {"type":"tool_use","id":"call2"`) ||
		strings.Join(r.calls, ",") != "call1,call2" {
		t.Fatalf("answered %+v, calls %v, client saw:\n%s", answered, r.calls, got)
	}

	_, answered, _, err = run(`{"x":1}`)
	if err != nil || len(answered) != 1 || !strings.HasPrefix(string(answered[0].Content[0]), `{"type":"text","text":"Invalid tool call, not run:`) {
		t.Fatalf("a lone invalid call: %v %+v", err, answered)
	}
}

func mustDelta(partial string) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"type": "input_json_delta", "partial_json": partial})
	return b
}
