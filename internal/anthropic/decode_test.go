package anthropic

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDecodeAcceptsWhatClientsSend(t *testing.T) {
	body := `{
		"model": "claude-sonnet-4-5",
		"max_tokens": 32000,
		"stream": true,
		"system": [{"type":"text","text":"You are helpful.","cache_control":{"type":"ephemeral"}}, {"type":"text","text":"Be brief."}],
		"messages": [
			{"role":"user","content":"plain string"},
			{"role":"assistant","content":[{"type":"thinking","thinking":"hmm","signature":"s"},{"type":"text","text":"ok"},{"type":"tool_use","id":"toolu_1","name":"read","input":{"path":"a"}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"file body"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}}],"is_error":false}]},
			{"role":"system","content":"mid-conversation system note"},
			{"role":"user","content":[{"type":"document","source":{"type":"text","media_type":"text/plain","data":"doc"},"title":"T"},{"type":"search_result","source":"x","title":"y","content":[]}]}
		],
		"thinking": {"type":"adaptive"},
		"output_config": {"effort":"high"},
		"context_management": {"edits":[]},
		"metadata": {"user_id":"{\"session_id\":\"abc\"}"},
		"tools": [{"name":"read","input_schema":{"type":"object"},"eager_input_streaming":true}],
		"tool_choice": {"type":"auto","disable_parallel_tool_use":false},
		"stop_sequences": ["END"],
		"temperature": 0.2, "top_p": 0.9, "top_k": 5
	}`
	req, err := DecodeMessagesRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if req.Model != "claude-sonnet-4-5" || req.MaxTokens != 32000 || !req.Stream || req.Effort != "high" {
		t.Fatalf("scalars: %+v", req)
	}
	if len(req.System) != 2 || req.System[1] != "Be brief." {
		t.Fatalf("system = %q", req.System)
	}
	if len(req.Messages) != 5 || req.Messages[3].Role != RoleSystem {
		t.Fatalf("messages = %+v", req.Messages)
	}
	if b := req.Messages[0].Content; len(b) != 1 || b[0].Type != BlockText || b[0].Text != "plain string" {
		t.Fatalf("string content = %+v", b)
	}
	tu := req.Messages[1].Content[2]
	if tu.ID != "toolu_1" || tu.Name != "read" || string(tu.Input) != `{"path":"a"}` {
		t.Fatalf("tool_use = %+v", tu)
	}
	tr := req.Messages[2].Content[0]
	if tr.ToolUseID != "toolu_1" || len(tr.Content) != 2 || tr.Content[1].Type != BlockImage {
		t.Fatalf("tool_result = %+v", tr)
	}
	if unknown := req.Messages[4].Content[1]; unknown.Type != "search_result" || !json.Valid(unknown.Raw) {
		t.Fatalf("unknown block = %+v", unknown)
	}
	if !req.Thinking.Enabled() || len(req.Tools) != 1 || len(req.ToolChoice) == 0 || len(req.StopSequences) != 1 {
		t.Fatalf("extras: %+v", req)
	}
	if *req.Temperature != 0.2 || *req.TopP != 0.9 || *req.TopK != 5 {
		t.Fatal("sampling parameters lost")
	}
}

func TestDecodeNamesTheField(t *testing.T) {
	cases := []struct{ body, want string }{
		{``, "request body is empty"},
		{`nope`, "malformed JSON"},
		{`{"model":"m","messages":[}`, "malformed JSON"},
		{`"string"`, "must be a JSON object"},
		{`{}`, "model: Field required"},
		{`{"model":""}`, "model: must not be empty"},
		{`{"model":["m"]}`, "model: expected a string"},
		{`{"model":"m"}`, "messages: Field required"},
		{`{"model":"m","messages":{}}`, "messages: expected an array"},
		{`{"model":"m","messages":[]}`, "messages: must contain at least one message"},
		{`{"model":"m","messages":[1]}`, "messages.0: expected an object"},
		{`{"model":"m","messages":[{"content":"x"}]}`, "messages.0.role: Field required"},
		{`{"model":"m","messages":[{"role":"tool","content":"x"}]}`, `messages.0.role: must be "user" or "assistant"`},
		{`{"model":"m","messages":[{"role":"user"}]}`, "messages.0.content: Field required"},
		{`{"model":"m","messages":[{"role":"user","content":5}]}`, "messages.0.content: expected a string or an array"},
		{`{"model":"m","messages":[{"role":"user","content":[{"text":"x"}]}]}`, "messages.0.content.0.type: Field required"},
		{`{"model":"m","messages":[{"role":"user","content":[{"type":"image"}]}]}`, "messages.0.content.0.source: Field required"},
		{`{"model":"m","messages":[{"role":"user","content":[{"type":"image","source":{}}]}]}`, "messages.0.content.0.source.type: Field required"},
		{`{"model":"m","messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"n","input":[]}]}]}`, "messages.0.content.0.input: expected an object"},
		{`{"model":"m","messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","is_error":"no"}]}]}`, "messages.0.content.0.is_error: expected a boolean"},
		{`{"model":"m","messages":[{"role":"user","content":"x"}],"max_tokens":1.5}`, "max_tokens: expected an integer"},
		{`{"model":"m","messages":[{"role":"user","content":"x"}],"max_tokens":"9"}`, "max_tokens: expected an integer"},
		{`{"model":"m","messages":[{"role":"user","content":"x"}],"system":[{"type":"image"}]}`, "system.0.type: system blocks must be text"},
		{`{"model":"m","messages":[{"role":"user","content":"x"}],"thinking":{"type":"enabled"}}`, "thinking.budget_tokens: Field required"},
		{`{"model":"m","messages":[{"role":"user","content":"x"}],"thinking":{"type":"maybe"}}`, "thinking.type"},
		{`{"model":"m","messages":[{"role":"user","content":"x"}],"stop_sequences":"END"}`, "stop_sequences: expected an array of strings"},
		{`{"model":"m","messages":[{"role":"user","content":"x"}],"stop_sequences":[""]}`, "stop_sequences.0: must not be empty"},
		{`{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"input_schema":{}}]}`, "tools.0.name: Field required"},
		{`{"model":"m","messages":[{"role":"user","content":"x"}],"tool_choice":"auto"}`, "tool_choice: expected an object"},
		{`{"model":"m","messages":[{"role":"user","content":"x"}],"temperature":"hot"}`, "temperature: expected a number"},
	}
	for _, c := range cases {
		_, err := DecodeMessagesRequest([]byte(c.body))
		var re *RequestError
		if !errors.As(err, &re) {
			t.Errorf("%s: err = %v, want a RequestError", c.body, err)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s:\n got %q\nwant it to contain %q", c.body, err, c.want)
		}
	}
}

func TestDecodeBoundsNesting(t *testing.T) {
	inner := `[{"type":"text","text":"x"}]`
	for range 6 {
		inner = `[{"type":"tool_result","tool_use_id":"t","content":` + inner + `}]`
	}
	_, err := DecodeMessagesRequest([]byte(`{"model":"m","messages":[{"role":"user","content":` + inner + `}]}`))
	if err == nil || !strings.Contains(err.Error(), "nested too deeply") {
		t.Fatalf("err = %v", err)
	}
}

// FuzzDecodeMessagesRequest: no input panics, and every failure is a
// RequestError (which the server answers with 400, never 500).
func FuzzDecodeMessagesRequest(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/requests/*.json")
	for _, p := range seeds {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"x"}]}]}`))
	f.Add([]byte(``))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := DecodeMessagesRequest(body)
		if err != nil {
			var re *RequestError
			if !errors.As(err, &re) {
				t.Fatalf("error %v is %T, not a RequestError", err, err)
			}
			if req != nil {
				t.Fatal("a request came back with an error")
			}
			return
		}
		if req.Model == "" || len(req.Messages) == 0 {
			t.Fatalf("accepted an incomplete request: %+v", req)
		}
		for _, m := range req.Messages {
			for _, b := range m.Content {
				if b.Type == "" || !json.Valid(b.Raw) {
					t.Fatalf("block without type or raw JSON: %+v", b)
				}
			}
		}
	})
}
