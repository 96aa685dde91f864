package openai

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/meridian-gw/meridian/internal/anthropic"
)

// chunks splits an SSE body into its data payloads, checking each chunk
// is JSON with the response's id.
func chunks(t *testing.T, body []byte) []string {
	t.Helper()
	var out []string
	for _, frame := range strings.Split(strings.TrimSuffix(string(body), "\n\n"), "\n\n") {
		data, ok := strings.CutPrefix(frame, "data: ")
		if !ok {
			t.Fatalf("frame %q is not a data line", frame)
		}
		if data != "[DONE]" {
			var c struct {
				ID     string `json:"id"`
				Object string `json:"object"`
			}
			if err := json.Unmarshal([]byte(data), &c); err != nil || c.ID != "chatcmpl-1" || c.Object != "chat.completion.chunk" {
				t.Fatalf("chunk %s: %v", data, err)
			}
		}
		out = append(out, data)
	}
	return out
}

// deltas reduces each chunk to its choice's delta and finish reason, or
// its usage.
func deltas(t *testing.T, body []byte) []string {
	t.Helper()
	var out []string
	for _, data := range chunks(t, body) {
		if data == "[DONE]" {
			out = append(out, data)
			continue
		}
		var c struct {
			Choices []struct {
				Delta        json.RawMessage `json:"delta"`
				FinishReason *string         `json:"finish_reason"`
			} `json:"choices"`
			Usage json.RawMessage `json:"usage"`
		}
		_ = json.Unmarshal([]byte(data), &c)
		if len(c.Choices) == 0 {
			out = append(out, "usage "+string(c.Usage))
			continue
		}
		s := string(c.Choices[0].Delta)
		if f := c.Choices[0].FinishReason; f != nil {
			s += " " + *f
		}
		out = append(out, s)
	}
	return out
}

func TestChunksForTextThinkingAndCalls(t *testing.T) {
	e := NewChunkEncoder("chatcmpl-1", 1700000000, true, nil)
	var b []byte
	b = e.Start(b, "claude-x")
	b = e.BlockStart(b, 0, json.RawMessage(`{"type":"thinking","thinking":""}`))
	b = e.BlockDelta(b, 0, json.RawMessage(`{"type":"thinking_delta","thinking":"hm"}`))
	b = e.BlockDelta(b, 0, json.RawMessage(`{"type":"signature_delta","signature":"sig"}`))
	b = e.BlockStop(b, 0)
	b = e.BlockStart(b, 1, json.RawMessage(`{"type":"text","text":""}`))
	b = e.BlockDelta(b, 1, json.RawMessage(`{"type":"text_delta","text":"Hi \"you\"\n"}`))
	b = e.BlockStop(b, 1)
	b = e.BlockStart(b, 2, json.RawMessage(`{"type":"tool_use","id":"toolu_1","name":"read","input":{}}`))
	b = e.BlockDelta(b, 2, json.RawMessage(`{"type":"input_json_delta","partial_json":"{\"path\":"}`))
	b = e.BlockDelta(b, 2, json.RawMessage(`{"type":"input_json_delta","partial_json":"\"a\"}"}`))
	b = e.BlockStop(b, 2)
	b = e.BlockStart(b, 3, json.RawMessage(`{"type":"tool_use","id":"toolu_2","name":"noop","input":{}}`))
	b = e.BlockStop(b, 3)
	b, err := e.Finish(b, "tool_use", anthropic.Usage{InputTokens: 5, OutputTokens: 2, CacheReadInputTokens: 10, CacheCreationInputTokens: 1})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`{"role":"assistant","content":""}`,
		`{"reasoning_content":"hm"}`,
		`{"content":"Hi \"you\"\n"}`,
		`{"tool_calls":[{"index":0,"id":"toolu_1","type":"function","function":{"name":"read","arguments":""}}]}`,
		`{"tool_calls":[{"index":0,"function":{"arguments":"{\"path\":"}}]}`,
		`{"tool_calls":[{"index":0,"function":{"arguments":"\"a\"}"}}]}`,
		`{"tool_calls":[{"index":1,"id":"toolu_2","type":"function","function":{"name":"noop","arguments":""}}]}`,
		`{"tool_calls":[{"index":1,"function":{"arguments":"{}"}}]}`,
		`{} tool_calls`,
		`usage {"prompt_tokens":16,"completion_tokens":2,"total_tokens":18,"prompt_tokens_details":{"cached_tokens":10}}`,
		`[DONE]`,
	}
	if got := deltas(t, b); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !strings.Contains(string(b), `"model":"claude-x"`) || !strings.Contains(string(b), `"created":1700000000`) {
		t.Fatalf("chunks lack the model or time: %s", b)
	}
}

// With a response format, text is held until the answer is complete, then
// checked: a fenced answer is unwrapped, one that does not fit is an error
// and nothing of it is written.
func TestChunksHoldTextForTheFormat(t *testing.T) {
	format := &ResponseFormat{Type: "json_schema", Name: "n", Schema: []byte(`{"type":"object","required":["n"],"properties":{"n":{"type":"integer"}}}`)}
	run := func(text, stop string) ([]byte, error) {
		e := NewChunkEncoder("chatcmpl-1", 1, false, format)
		b := e.Start(nil, "m")
		b = e.BlockStart(b, 0, json.RawMessage(`{"type":"text","text":""}`))
		for _, piece := range strings.SplitAfter(text, "\n") {
			b = e.BlockDelta(b, 0, append(anthropic.AppendString([]byte(`{"type":"text_delta","text":`), piece), '}'))
		}
		if got := len(chunks(t, b)); got != 1 {
			t.Fatalf("text reached the client before it was checked: %s", b)
		}
		b = e.BlockStop(b, 0)
		return e.Finish(b, stop, anthropic.Usage{})
	}
	b, err := run("```json\n{\"n\": 3}\n```", "end_turn")
	if err != nil {
		t.Fatal(err)
	}
	if got := deltas(t, b); got[1] != `{"content":"{\"n\": 3}"}` || got[2] != `{} stop` {
		t.Fatalf("deltas = %q", got)
	}
	_, err = run(`{"n": "three"}`, "end_turn")
	var fe *FormatError
	if !errors.As(err, &fe) || !strings.Contains(err.Error(), "response_format") {
		t.Fatalf("err = %v, want a FormatError", err)
	}
	// A cut-off answer is not checked: the client sees what there is.
	if b, err = run(`{"n": `, "max_tokens"); err != nil || deltas(t, b)[1] != `{"content":"{\"n\": "}` {
		t.Fatalf("truncated: %v %s", err, b)
	}
}

func TestErrorChunkAndEnvelope(t *testing.T) {
	got := string(AppendErrorChunk(nil, 429, "slow down", 30))
	want := `data: {"error":{"message":"slow down","type":"rate_limit_error","param":null,"code":"rate_limit_exceeded","retry_after":30}}` + "\n\ndata: [DONE]\n\n"
	if got != want {
		t.Fatalf("got %q\nwant %q", got, want)
	}
	if got := string(AppendError(nil, 400, "bad", "messages.0.role", 0)); got != `{"error":{"message":"bad","type":"invalid_request_error","param":"messages.0.role","code":null}}` {
		t.Fatalf("envelope = %s", got)
	}
	for status, typ := range map[int]string{401: "authentication_error", 404: "invalid_request_error", 500: "server_error", 502: "server_error", 529: "server_error", 418: "invalid_request_error"} {
		if got, _ := errorKind(status); got != typ {
			t.Errorf("%d: type %q, want %q", status, got, typ)
		}
	}
}

func TestCompletionShapes(t *testing.T) {
	c, err := NewCompletion(Answer{ID: "chatcmpl-1", Model: "m", Created: 5, StopReason: "refusal",
		Content: []json.RawMessage{json.RawMessage(`{"type":"text","text":"no"}`)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(c)
	want := `{"id":"chatcmpl-1","object":"chat.completion","created":5,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"no","refusal":null},"logprobs":null,"finish_reason":"content_filter"}],"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0,"prompt_tokens_details":{"cached_tokens":0}},"system_fingerprint":null}`
	if string(body) != want {
		t.Fatalf("got  %s\nwant %s", body, want)
	}
	calls, _ := NewCompletion(Answer{StopReason: "tool_use", Content: []json.RawMessage{json.RawMessage(`{"type":"tool_use","id":"t","name":"f","input":{ "a" : 1 }}`)}}, nil)
	if m := calls.Choices[0].Message; m.Content != nil || m.ToolCalls[0].Function.Arguments != `{"a":1}` || calls.Choices[0].FinishReason != "tool_calls" {
		t.Fatalf("message = %+v", m)
	}
	for stop, want := range map[string]string{"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length", "model_context_window_exceeded": "length", "pause_turn": "stop"} {
		if got := FinishReason(stop); got != want {
			t.Errorf("%s → %s, want %s", stop, got, want)
		}
	}
}

func TestUnfence(t *testing.T) {
	for in, want := range map[string]string{
		"  {\"a\":1}  ":           `{"a":1}`,
		"```json\n{\"a\":1}\n```": `{"a":1}`,
		"```\n[1]\n```":           `[1]`,
		"```python\nx\n```":       "```python\nx\n```",
		"```{}```":                "```{}```",
	} {
		if got := Unfence(in); got != want {
			t.Errorf("Unfence(%q) = %q, want %q", in, got, want)
		}
	}
}

// The text delta fast path takes only the plain form and leaves anything
// else to the full decoder.
func TestPlainTextDelta(t *testing.T) {
	for delta, want := range map[string]string{
		`{"type":"text_delta","text":"hi"}`:           `"hi"`,
		`{"type":"text_delta","text":"a \"q\" \\ b"}`: `"a \"q\" \\ b"`,
		`{"type":"text_delta","text":""}`:             `""`,
		`{"text":"hi","type":"text_delta"}`:           "",
		`{"type":"text_delta","text":"a","x":"b"}`:    "",
		`{"type":"text_delta","text":"a\"}`:           "",
		`{"type":"thinking_delta","thinking":"x"}`:    "",
	} {
		raw, ok := plainTextDelta(json.RawMessage(delta))
		if got := string(raw); ok != (want != "") || got != want {
			t.Errorf("%s → %q %v, want %q", delta, got, ok, want)
		}
	}
}
