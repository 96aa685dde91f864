package openai

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/meridian-gw/meridian/internal/anthropic"
	"github.com/meridian-gw/meridian/internal/lineage"
)

func roles(msgs []anthropic.Message) string {
	var out []string
	for _, m := range msgs {
		var kinds []string
		for _, b := range m.Content {
			kinds = append(kinds, b.Type)
		}
		out = append(out, m.Role+"("+strings.Join(kinds, ",")+")")
	}
	return strings.Join(out, " ")
}

func TestTranslateConversation(t *testing.T) {
	req := decode(t, `{"model":"m","messages":[
		{"role":"system","content":"You are a helper."},
		{"role":"developer","content":[{"type":"text","text":"Be brief."},{"type":"text","text":"Use tools."}]},
		{"role":"user","content":"read two files"},
		{"role":"assistant","content":"Reading.","tool_calls":[
			{"id":"c1","type":"function","function":{"name":"read","arguments":"{ \"path\": \"a\" }"}},
			{"id":"c2","type":"function","function":{"name":"read","arguments":""}}]},
		{"role":"tool","tool_call_id":"c2","content":"B"},
		{"role":"tool","tool_call_id":"c1","content":[{"type":"text","text":"A"}]},
		{"role":"user","content":"and then?"},
		{"role":"developer","content":"New rule."},
		{"role":"user","content":"go on"}],
		"max_completion_tokens":50,"stop":["X"],"stream":true,"reasoning_effort":"minimal",
		"tools":[{"type":"function","function":{"name":"read","description":"Read","parameters":{"type":"object"}}},{"type":"function","function":{"name":"noop"}}]}`)
	a := req.Anthropic()
	if !slices.Equal(a.System, []string{"You are a helper.", "Be brief.", "Use tools."}) {
		t.Fatalf("system = %q", a.System)
	}
	if got := roles(a.Messages); got != "user(text) assistant(text,tool_use,tool_use) user(tool_result,tool_result,text) system(text) user(text)" {
		t.Fatalf("messages = %s", got)
	}
	call := a.Messages[1].Content[1]
	if call.ID != "c1" || call.Name != "read" || string(call.Input) != `{"path":"a"}` {
		t.Fatalf("call = %+v", call)
	}
	if empty := a.Messages[1].Content[2]; string(empty.Input) != `{}` {
		t.Fatalf("a call without arguments has input %s", empty.Input)
	}
	results := a.Messages[2].Content
	if results[0].ToolUseID != "c2" || results[0].Content[0].Text != "B" || results[1].ToolUseID != "c1" || results[2].Text != "and then?" {
		t.Fatalf("results = %+v", results)
	}
	for _, m := range a.Messages {
		for _, b := range m.Content {
			if _, err := anthropic.DecodeContentBlock(b.Raw); err != nil {
				t.Fatalf("block %s does not decode as a Messages block: %v", b.Raw, err)
			}
		}
	}
	if a.MaxTokens != 50 || !a.Stream || !slices.Equal(a.StopSequences, []string{"X"}) || a.Thinking == nil || a.Thinking.Type != "adaptive" || a.Effort != "low" {
		t.Fatalf("parameters = %+v", a)
	}
	if len(a.Tools) != 2 || !strings.Contains(string(a.Tools[1]), `"input_schema":{"type":"object","properties":{}}`) {
		t.Fatalf("tools = %s", a.Tools)
	}
}

func TestTranslateImagesAndFormat(t *testing.T) {
	a := decode(t, string(seedBodies(t)["multimodal.json"])).Anthropic()
	blocks := a.Messages[0].Content
	if len(blocks) != 3 || !strings.Contains(string(blocks[1].Raw), `"source":{"type":"base64","media_type":"image/png","data":"iVBOR`) ||
		string(blocks[2].Raw) != `{"type":"image","source":{"type":"url","url":"https://example.com/cat.png"}}` {
		t.Fatalf("image blocks = %s | %s", blocks[1].Raw, blocks[2].Raw)
	}
	s := decode(t, string(seedBodies(t)["structured.json"])).Anthropic()
	if s.Format == nil || s.Format.Field != "response_format" || !strings.Contains(string(s.Format.Schema), `"required":["name","age"]`) || len(s.System) != 0 {
		t.Fatalf("format = %+v, system %q", s.Format, s.System)
	}
	if none := decode(t, `{"model":"m","messages":[{"role":"user","content":"x"}],"reasoning_effort":"none"}`).Anthropic(); none.Thinking != nil || none.Effort != "" {
		t.Fatalf("reasoning_effort none turned thinking on: %+v", none)
	}
}

// What a chat client echoes of an answer — the completion turned back
// into an assistant message of its next request — digests as Echo says,
// so lineage proves the conversation continues.
func TestEchoMatchesWhatTheClientSendsBack(t *testing.T) {
	answer := anthropic.Message{Role: anthropic.RoleAssistant}
	var content []json.RawMessage
	for _, raw := range []string{
		`{"type":"thinking","thinking":"hmm","signature":"s"}`,
		`{"type":"text","text":"First, "}`,
		`{"type":"text","text":"then."}`,
		`{"type":"tool_use","id":"toolu_1","name":"read","input":{"b":1,"a":[true]}}`,
		`{"type":"tool_use","id":"toolu_2","name":"noop","input":{}}`,
	} {
		b, err := anthropic.DecodeContentBlock(json.RawMessage(raw))
		if err != nil {
			t.Fatal(err)
		}
		answer.Content = append(answer.Content, b)
		content = append(content, json.RawMessage(raw))
	}
	c, err := NewCompletion(Answer{ID: "x", Model: "m", Content: content, StopReason: "tool_use"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := json.Marshal(c.Choices[0].Message)
	next, _ := json.Marshal(map[string]any{"model": "m", "messages": []json.RawMessage{
		json.RawMessage(`{"role":"user","content":"go"}`), msg,
		json.RawMessage(`{"role":"tool","tool_call_id":"toolu_1","content":"r1"}`),
		json.RawMessage(`{"role":"tool","tool_call_id":"toolu_2","content":"r2"}`),
	}})
	req := decode(t, string(next))
	echoed := req.Anthropic().Messages[1]
	if lineage.MessageDigest(echoed) != lineage.MessageDigest(req.Echo(answer)) {
		t.Fatalf("the client echoes %s\nbut Echo records %s", roles([]anthropic.Message{echoed}), roles([]anthropic.Message{req.Echo(answer)}))
	}
	if c.Choices[0].Message.ReasoningContent != "hmm" || *c.Choices[0].Message.Content != "First, then." {
		t.Fatalf("message = %s", msg)
	}
}
