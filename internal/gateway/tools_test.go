package gateway

import (
	"encoding/json"
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

// A tool call reaches the client only once complete and valid; an invalid
// one is answered to the backend instead; a valid batch pauses the turn.
func TestRelayHoldsAndChecksToolCalls(t *testing.T) {
	out := &record{}
	r := newRelay(out, Start{ID: "msg_1", Model: "m"}, &anthropic.MessagesRequest{}, func() string { return "sid" })
	r.tools = &clientTools{schemas: map[string]json.RawMessage{"read": json.RawMessage(`{"type":"object","required":["path"]}`)}}
	var answered []backend.ToolResult
	r.answer = func(res backend.ToolResult) error { answered = append(answered, res); return nil }
	use := func(i int, id, input string) []*backend.Event {
		return []*backend.Event{
			{Kind: backend.BlockStart, Index: i, BlockType: "tool_use", Block: json.RawMessage(`{"type":"tool_use","id":"` + id + `","name":"read","input":{}}`)},
			{Kind: backend.BlockDelta, Index: i, DeltaType: "input_json_delta", Delta: mustDelta(input[:len(input)/2])},
			{Kind: backend.BlockDelta, Index: i, DeltaType: "input_json_delta", Delta: mustDelta(input[len(input)/2:])},
			{Kind: backend.BlockStop, Index: i},
		}
	}
	events := append([]*backend.Event{start(0, "text"), text(0, "calling"), stop(0)}, use(1, "bad", `{"x":1}`)...)
	events = append(events, use(2, "good", `{"path":"a"}`)...)
	for _, ev := range events {
		if err := r.handle(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.handle(&backend.Event{Kind: backend.MessageDelta, StopReason: "tool_use"}); err != backend.ErrPause {
		t.Fatalf("a valid batch must pause the turn, got %v", err)
	}
	got := strings.Join(out.calls, "\n")
	if strings.Contains(got, `"bad"`) || !strings.Contains(got, `block 1 {"type":"tool_use","id":"good"`) {
		t.Fatalf("client saw:\n%s", got)
	}
	if len(answered) != 1 || answered[0].ToolUseID != "bad" || !answered[0].IsError || len(r.calls) != 1 || r.calls[0] != "good" {
		t.Fatalf("answered %+v, calls %v", answered, r.calls)
	}
}

func mustDelta(partial string) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"type": "input_json_delta", "partial_json": partial})
	return b
}
