package openai

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/meridian-gw/meridian/internal/jsonbody"
)

// seeds reads the requests in a testdata folder, by file name.
func seeds(t testing.TB, dir string) map[string][]byte {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join("testdata", dir, "*.json"))
	if len(paths) == 0 {
		t.Fatalf("no seed requests in testdata/%s", dir)
	}
	out := map[string][]byte{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(p)] = b
	}
	return out
}

func seedBodies(t testing.TB) map[string][]byte { return seeds(t, "chat") }

// mustDecode decodes a body that must be valid.
func mustDecode[T any](t *testing.T, decode func([]byte) (T, error), body string) T {
	t.Helper()
	req, err := decode([]byte(body))
	if err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	return req
}

func decode(t *testing.T, body string) *ChatRequest { return mustDecode(t, DecodeChatRequest, body) }

// What real clients send decodes.
func TestDecodeRealClients(t *testing.T) {
	for name, body := range seedBodies(t) {
		if _, err := DecodeChatRequest(body); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestDecodeFields(t *testing.T) {
	req := decode(t, string(seedBodies(t)["multimodal.json"]))
	if req.Model != "m" || req.ReasoningEffort != "low" || req.User != "u-1" || req.Metadata["session_id"] != "s-1" {
		t.Fatalf("request = %+v", req)
	}
	user := req.Messages[1]
	if len(user.Parts) != 3 || user.Parts[1].MediaType != "image/png" || user.Parts[1].Data == "" || user.Parts[2].URL != "https://example.com/cat.png" {
		t.Fatalf("user parts = %+v", user.Parts)
	}
	if !slices.Equal(req.Ignored, []string{"temperature", "seed"}) {
		t.Fatalf("ignored = %v", req.Ignored)
	}

	req = decode(t, string(seedBodies(t)["structured.json"]))
	if req.Format == nil || req.Format.Type != "json_schema" || req.Format.Name != "person" || !slices.Equal(req.Stop, []string{"END", "STOP"}) {
		t.Fatalf("request = %+v", req)
	}
	if !slices.Equal(req.Ignored, []string{"parallel_tool_calls"}) {
		t.Fatalf("ignored = %v", req.Ignored)
	}

	req = decode(t, `{"model":"m","messages":[{"role":"user","content":"x"}],"max_tokens":10,"max_completion_tokens":20,"stop":"END","tool_choice":"required","store":true}`)
	if req.MaxTokens != 20 || !slices.Equal(req.Stop, []string{"END"}) || !slices.Equal(req.Ignored, []string{"tool_choice", "store"}) {
		t.Fatalf("request = %+v", req)
	}
}

// Bad input is a *jsonbody.Error that names the field.
func TestDecodeErrorsNameTheField(t *testing.T) {
	const user = `{"role":"user","content":"x"}`
	call := `{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}`
	cases := []struct{ body, field, want string }{
		{``, "", "request body is empty"},
		{`[1]`, "", "must be a JSON object"},
		{`{"model":`, "", "malformed JSON"},
		{`{"messages":[` + user + `]}`, "model", "Field required"},
		{`{"model":7,"messages":[` + user + `]}`, "model", "expected a string"},
		{`{"model":"m"}`, "messages", "Field required"},
		{`{"model":"m","messages":[]}`, "messages", "at least one"},
		{`{"model":"m","messages":{}}`, "messages", "expected an array"},
		{`{"model":"m","messages":[{"role":"robot","content":"x"}]}`, "messages.0.role", "must be one of"},
		{`{"model":"m","messages":[{"role":"function","name":"f","content":"x"}]}`, "messages.0.role", "legacy function role"},
		{`{"model":"m","messages":[{"role":"user"}]}`, "messages.0.content", "Field required"},
		{`{"model":"m","messages":[{"role":"user","content":5}]}`, "messages.0.content", "expected a string or an array"},
		{`{"model":"m","messages":[{"role":"user","content":[{"type":"text"}]}]}`, "messages.0.content.0.text", "Field required"},
		{`{"model":"m","messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{}}]}]}`, "messages.0.content.0.input_audio.data", "Field required"},
		{`{"model":"m","messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"AAAA","format":"flac"}}]}]}`, "messages.0.content.0.input_audio.format", "wav or mp3"},
		{`{"model":"m","messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"!!","format":"wav"}}]}]}`, "messages.0.content.0.input_audio.data", "not valid base64"},
		{`{"model":"m","messages":[{"role":"user","content":[{"type":"file","file":{}}]}]}`, "messages.0.content.0.file.file_data", "Field required"},
		{`{"model":"m","messages":[{"role":"user","content":[{"type":"file","file":{"file_id":"f"}}]}]}`, "messages.0.content.0.file.file_id", "Files API"},
		{`{"model":"m","messages":[{"role":"user","content":[{"type":"file","file":{"file_data":"data:application/zip;base64,AAAA"}}]}]}`, "messages.0.content.0.file.file_data", "not supported"},
		{`{"model":"m","messages":[{"role":"system","content":[{"type":"image_url","image_url":{"url":"https://x/y.png"}}]},` + user + `]}`, "messages.0.content.0.type", "unsupported content part"},
		{`{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"http://x/y.png"}}]}]}`, "messages.0.content.0.image_url.url", "https URL"},
		{`{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/tiff;base64,AAAA"}}]}]}`, "messages.0.content.0.image_url.url", "not supported"},
		{`{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,%%%"}}]}]}`, "messages.0.content.0.image_url.url", "not valid base64"},
		{`{"model":"m","messages":[` + user + `,{"role":"tool","tool_call_id":"c1","content":"r"}]}`, "messages.1.role", "must follow the assistant"},
		{`{"model":"m","messages":[` + user + `,` + call + `,{"role":"tool","tool_call_id":"c9","content":"r"}]}`, "messages.2.tool_call_id", "answers no open tool call"},
		{`{"model":"m","messages":[` + user + `,` + call + `,{"role":"tool","tool_call_id":"c1","content":"r"},{"role":"tool","tool_call_id":"c1","content":"r"}]}`, "messages.3.tool_call_id", "answers no open tool call"},
		{`{"model":"m","messages":[` + user + `,` + call + `,{"role":"tool","content":"r"}]}`, "messages.2.tool_call_id", "Field required"},
		{`{"model":"m","messages":[` + user + `,{"role":"assistant","tool_calls":[{"id":"c1","function":{"name":"f","arguments":"[1]"}}]},` + user + `]}`, "messages.1.tool_calls.0.function.arguments", "JSON object"},
		{`{"model":"m","messages":[` + user + `,{"role":"assistant","tool_calls":[{"id":"c1","type":"custom","function":{"name":"f"}}]},` + user + `]}`, "messages.1.tool_calls.0.custom", "Field required"},
		{`{"model":"m","messages":[` + user + `,{"role":"assistant","tool_calls":[{"id":"c1","type":"web","function":{"name":"f"}}]},` + user + `]}`, "messages.1.tool_calls.0.type", "only function and custom calls"},
		{`{"model":"m","messages":[` + user + `,{"role":"assistant","function_call":{"name":"f"}},` + user + `]}`, "messages.1.function_call", "legacy"},
		{`{"model":"m","messages":[` + user + `,{"role":"assistant","content":"prefill"}]}`, "messages.1.role", "must be the user's"},
		{`{"model":"m","messages":[` + user + `],"n":2}`, "n", "only n: 1"},
		{`{"model":"m","messages":[` + user + `],"n":"2"}`, "n", "expected an integer"},
		{`{"model":"m","messages":[` + user + `],"logprobs":true}`, "logprobs", "not available"},
		{`{"model":"m","messages":[` + user + `],"top_logprobs":3}`, "top_logprobs", "not available"},
		{`{"model":"m","messages":[` + user + `],"modalities":["text","audio"]}`, "modalities.1", "only text"},
		{`{"model":"m","messages":[` + user + `],"audio":{"voice":"x"}}`, "audio", "not supported"},
		{`{"model":"m","messages":[` + user + `],"max_tokens":0}`, "max_tokens", "at least 1"},
		{`{"model":"m","messages":[` + user + `],"max_completion_tokens":1.5}`, "max_completion_tokens", "expected an integer"},
		{`{"model":"m","messages":[` + user + `],"stop":7}`, "stop", "a string or an array"},
		{`{"model":"m","messages":[` + user + `],"stop":["a",""]}`, "stop.1", "must not be empty"},
		{`{"model":"m","messages":[` + user + `],"stream":"yes"}`, "stream", "expected a boolean"},
		{`{"model":"m","messages":[` + user + `],"stream_options":{"include_usage":1}}`, "stream_options.include_usage", "expected a boolean"},
		{`{"model":"m","messages":[` + user + `],"reasoning_effort":"extreme"}`, "reasoning_effort", "must be one of"},
		{`{"model":"m","messages":[` + user + `],"tools":[{"type":"web","custom":{"name":"x"}}]}`, "tools.0.type", "only function and custom tools"},
		{`{"model":"m","messages":[` + user + `],"tools":[{"type":"custom","custom":{"name":"x","format":{"type":"grammar"}}}]}`, "tools.0.custom.format.grammar", "Field required"},
		{`{"model":"m","messages":[` + user + `],"tools":[{"type":"custom","custom":{"name":""}}]}`, "tools.0.custom.name", "must not be empty"},
		{`{"model":"m","messages":[` + user + `],"tools":[{"type":"function","function":{"description":"d"}}]}`, "tools.0.function.name", "Field required"},
		{`{"model":"m","messages":[` + user + `],"tools":[{"type":"function","function":{"name":"f","parameters":[]}}]}`, "tools.0.function.parameters", "expected an object"},
		{`{"model":"m","messages":[` + user + `],"tool_choice":"sometimes"}`, "tool_choice", "must be none, auto, required"},
		{`{"model":"m","messages":[` + user + `],"tool_choice":{"function":{"name":"f"}}}`, "tool_choice.type", "Field required"},
		{`{"model":"m","messages":[` + user + `],"temperature":"hot"}`, "temperature", "expected a number"},
		{`{"model":"m","messages":[` + user + `],"logit_bias":[1]}`, "logit_bias", "expected an object"},
		{`{"model":"m","messages":[` + user + `],"metadata":{"k":1}}`, "metadata", "object of strings"},
		{`{"model":"m","messages":[` + user + `],"response_format":{"type":"yaml"}}`, "response_format.type", "must be text, json_object or json_schema"},
		{`{"model":"m","messages":[` + user + `],"response_format":{"type":"json_schema"}}`, "response_format.json_schema", "Field required"},
		{`{"model":"m","messages":[` + user + `],"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":7}}}}`, "response_format.json_schema.schema", "not a usable JSON Schema"},
	}
	for _, c := range cases {
		_, err := DecodeChatRequest([]byte(c.body))
		checkFieldError(t, c.body, err, c.field, c.want)
	}
}

// checkFieldError asserts err is a field error at field whose message
// says want.
func checkFieldError(t *testing.T, body string, err error, field, want string) {
	t.Helper()
	var fe *jsonbody.Error
	if !errors.As(err, &fe) {
		t.Errorf("%s: err = %v, want a field error", body, err)
		return
	}
	if fe.Field != field || !strings.Contains(fe.Message, want) {
		t.Errorf("%s:\n got %q at %q\nwant %q at %q", body, fe.Message, fe.Field, want, field)
	}
}

// FuzzDecodeChatRequest: no input panics, every failure is a field error
// (answered with 400, never 500), and whatever is accepted translates.
func FuzzDecodeChatRequest(f *testing.F) {
	for _, b := range seedBodies(f) {
		f.Add(b)
	}
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"a","function":{"name":"f","arguments":""}}]},{"role":"tool","tool_call_id":"a","content":[{"type":"text","text":"r"}]}]}`))
	f.Add([]byte(``))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := DecodeChatRequest(body)
		if err != nil {
			var fe *jsonbody.Error
			if !errors.As(err, &fe) {
				t.Fatalf("error %v is %T, not a field error", err, err)
			}
			if req != nil {
				t.Fatal("a request came back with an error")
			}
			return
		}
		if req.Model == "" || len(req.Messages) == 0 {
			t.Fatalf("accepted an incomplete request: %+v", req)
		}
		areq := req.Anthropic()
		if len(areq.Messages) == 0 && len(areq.System) == 0 {
			t.Fatalf("translated to nothing: %+v", areq)
		}
		for _, m := range areq.Messages {
			for _, b := range m.Content {
				if b.Type == "" || len(b.Raw) == 0 {
					t.Fatalf("block without type or raw JSON: %+v", b)
				}
			}
		}
	})
}
