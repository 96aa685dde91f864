package openai

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/meridian-gw/meridian/internal/jsonbody"
)

func responseSeeds(t testing.TB) map[string][]byte { return seeds(t, "responses") }

func decodeResponses(t *testing.T, body string) *ResponsesRequest {
	return mustDecode(t, DecodeResponsesRequest, body)
}

func TestDecodeResponsesRealClients(t *testing.T) {
	for name, body := range responseSeeds(t) {
		if _, err := DecodeResponsesRequest(body); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	codex := decodeResponses(t, string(responseSeeds(t)["codex.json"]))
	if codex.Store || !codex.Stream || !codex.EncryptedReasoning || codex.ReasoningSummary != "auto" || !codex.Reasoning || codex.PromptCacheKey != "01a22c71-6a62" {
		t.Fatalf("codex request = %+v", codex)
	}
	var names []string
	for _, f := range codex.Tools {
		names = append(names, f.Name)
	}
	if !slices.Equal(names, []string{"exec_command", "multi_agent_v1__spawn_agent"}) || codex.Tools[1].Namespace != "multi_agent_v1" || codex.Tools[1].Local != "spawn_agent" {
		t.Fatalf("tools = %+v", codex.Tools)
	}
	if len(codex.Ignored) != 0 || codex.WebSearch == nil || codex.WebSearch.Tool != "web_search" {
		t.Fatalf("ignored = %v, web search %+v", codex.Ignored, codex.WebSearch)
	}
	s := decodeResponses(t, string(responseSeeds(t)["structured.json"]))
	if !s.Background || !s.Store || s.Previous != "resp_prev" || s.Format == nil || s.Format.Name != "person" || s.Input[1].Ref != "msg_x" ||
		!slices.Equal(s.Ignored, []string{"temperature"}) {
		t.Fatalf("structured = %+v", s)
	}
}

// Bad input is a field error naming the field; never anything else.
func TestDecodeResponsesErrorsNameTheField(t *testing.T) {
	cases := []struct{ body, field, want string }{
		{`{"input":"x"}`, "model", "Field required"},
		{`{"model":"m"}`, "input", "Field required"},
		{`{"model":"m","input":[]}`, "input", "at least one"},
		{`{"model":"m","input":7}`, "input", "a string or an array"},
		{`{"model":"m","input":[{"type":"computer_call","id":"x"}]}`, "input.0.type", "unsupported input item type"},
		{`{"model":"m","input":[{"role":"robot","content":"x"}]}`, "input.0.role", "must be one of"},
		{`{"model":"m","input":[{"role":"user"}]}`, "input.0.content", "Field required"},
		{`{"model":"m","input":[{"role":"user","content":[{"type":"output_text","text":"x"}]}]}`, "input.0.content.0.type", "unsupported content part"},
		{`{"model":"m","input":[{"role":"assistant","content":[{"type":"input_text","text":"x"}]}]}`, "input.0.content.0.type", "unsupported content part"},
		{`{"model":"m","input":[{"role":"user","content":[{"type":"input_file","file_id":"f"}]}]}`, "input.0.content.0.file_id", "Files API"},
		{`{"model":"m","input":[{"role":"user","content":[{"type":"input_file","file_data":"not a data url"}]}]}`, "input.0.content.0.file_data", "data URL"},
		{`{"model":"m","input":[{"role":"user","content":[{"type":"input_image","file_id":"f"}]}]}`, "input.0.content.0.image_url", "file ids"},
		{`{"model":"m","input":[{"role":"user","content":[{"type":"input_image","image_url":"ftp://x"}]}]}`, "input.0.content.0.image_url", "https URL"},
		{`{"model":"m","input":[{"type":"function_call","name":"f","arguments":"{}"}]}`, "input.0.call_id", "Field required"},
		{`{"model":"m","input":[{"type":"function_call","call_id":"c","name":"f","arguments":"[]"}]}`, "input.0.arguments", "JSON object"},
		{`{"model":"m","input":[{"type":"function_call_output","call_id":"c"}]}`, "input.0.output", "Field required"},
		{`{"model":"m","input":[{"type":"function_call_output","call_id":"c","output":[{"type":"output_text","text":"x"}]}]}`, "input.0.output.0.type", "unsupported content part"},
		{`{"model":"m","input":[{"type":"item_reference"}]}`, "input.0.id", "Field required"},
		{`{"model":"m","input":[{"type":"reasoning","summary":[{"type":"summary_text"}]}]}`, "input.0.summary.0.text", "Field required"},
		{`{"model":"m","input":"x","tools":[{"type":"function"}]}`, "tools.0.name", "Field required"},
		{`{"model":"m","input":"x","tools":[{"type":"function","name":"a"},{"type":"function","name":"a"}]}`, "tools.1.name", "used twice"},
		{`{"model":"m","input":"x","tools":[{"type":"namespace","name":"n"}]}`, "tools.0.tools", "Field required"},
		{`{"model":"m","input":"x","max_output_tokens":0}`, "max_output_tokens", "at least 1"},
		{`{"model":"m","input":"x","reasoning":{"effort":"huge"}}`, "reasoning.effort", "must be one of"},
		{`{"model":"m","input":"x","reasoning":{"summary":"long"}}`, "reasoning.summary", "must be one of"},
		{`{"model":"m","input":"x","text":{"format":{"type":"yaml"}}}`, "text.format.type", "must be text"},
		{`{"model":"m","input":"x","text":{"format":{"type":"json_schema","name":"n"}}}`, "text.format.schema", "Field required"},
		{`{"model":"m","input":"x","background":true,"store":false}`, "background", "requires store"},
		{`{"model":"m","input":"x","stream":"yes"}`, "stream", "expected a boolean"},
		{`{"model":"m","input":"x","include":["message.output_text.logprobs"]}`, "include.0", "not available"},
		{`{"model":"m","input":"x","conversation":"conv_1"}`, "conversation", "not served"},
		{`{"model":"m","input":"x","truncation":"sometimes"}`, "truncation", "auto or disabled"},
		{`{"model":"m","input":"x","tool_choice":"maybe"}`, "tool_choice", "must be none, auto"},
		{`{"model":"m","input":"x","temperature":"hot"}`, "temperature", "expected a number"},
	}
	for _, c := range cases {
		_, err := DecodeResponsesRequest([]byte(c.body))
		checkFieldError(t, c.body, err, c.field, c.want)
	}
}

// What only the whole history shows: outputs answer open calls,
// references resolve, the model speaks next.
func TestResponsesHistoryChecks(t *testing.T) {
	call := Item{Type: ItemFunctionCall, CallID: "c1", Name: "f", Arguments: "{}"}
	cases := []struct {
		history []Item
		body    string
		field   string
		want    string
	}{
		{nil, `{"model":"m","input":[{"type":"function_call_output","call_id":"c1","output":"r"}]}`, "input.0.call_id", "answers no open function_call"},
		{[]Item{call, {Type: ItemFunctionCallOutput, CallID: "c1"}}, `{"model":"m","input":[{"type":"function_call_output","call_id":"c1","output":"r"}]}`, "input.0.call_id", "answers no open"},
		{nil, `{"model":"m","input":[{"role":"user","content":"x"},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"}]}`, "input.1", "ends with a function_call"},
		{nil, `{"model":"m","input":[{"role":"user","content":"x"},{"role":"assistant","content":"prefill"}]}`, "input.1.role", "assistant's message"},
		{nil, `{"model":"m","input":[{"role":"developer","content":"x"}]}`, "input", "no user message"},
		{nil, `{"model":"m","input":[{"role":"user","content":"x"},{"type":"item_reference","id":"gone"}]}`, "input.1.id", "names no stored item"},
	}
	for _, c := range cases {
		req := decodeResponses(t, c.body)
		_, err := req.Anthropic(History{Items: c.history})
		var fe *jsonbody.Error
		if !errors.As(err, &fe) || fe.Field != c.field || !strings.Contains(fe.Message, c.want) {
			t.Errorf("%s: %v, want %q at %q", c.body, err, c.want, c.field)
		}
	}
	// With its call in the history, an output continues.
	req := decodeResponses(t, `{"model":"m","input":[{"type":"function_call_output","call_id":"c1","output":"r"}]}`)
	if _, err := req.Anthropic(History{Items: []Item{{Type: ItemMessage, Role: RoleUser, Parts: []Part{{Type: PartText, Text: "go"}}}, call}}); err != nil {
		t.Fatal(err)
	}
}

// FuzzDecodeResponsesRequest: no input panics, every failure is a field
// error, and whatever is accepted either translates or is refused with a
// field error too.
func FuzzDecodeResponsesRequest(f *testing.F) {
	for _, b := range responseSeeds(f) {
		f.Add(b)
	}
	f.Add([]byte(`{"model":"m","input":[{"type":"function_call","call_id":"a","name":"f"},{"type":"function_call_output","call_id":"a","output":[{"type":"input_text","text":"r"}]}]}`))
	f.Add([]byte(`{"model":"m","input":"x","tools":[{"type":"namespace","name":"n","tools":[{"type":"function","name":"f"}]}]}`))
	f.Add([]byte(``))
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := DecodeResponsesRequest(body)
		var fe *jsonbody.Error
		if err != nil {
			if !errors.As(err, &fe) || req != nil {
				t.Fatalf("error %v (%T), request %v", err, err, req)
			}
			return
		}
		areq, err := req.Anthropic(History{})
		if err != nil {
			if !errors.As(err, &fe) {
				t.Fatalf("translation error %v is %T, not a field error", err, err)
			}
			return
		}
		for _, m := range areq.Messages {
			for _, b := range m.Content {
				if b.Type == "" || !json.Valid(b.Raw) {
					t.Fatalf("block without type or valid raw JSON: %+v", b)
				}
			}
		}
		if items, err := DecodeItems(ItemsJSON(req.Input, "in")); err != nil || len(items) != len(req.Input) {
			t.Fatalf("stored items do not read back: %v (%d of %d)", err, len(items), len(req.Input))
		}
	})
}
