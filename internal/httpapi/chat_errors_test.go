package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	oaioption "github.com/openai/openai-go/v3/option"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// openAIError checks a response is the OpenAI error envelope.
func openAIError(t *testing.T, resp *http.Response, body []byte, status int, errType, param, mention string) {
	t.Helper()
	var env struct {
		Error struct {
			Message string  `json:"message"`
			Type    string  `json:"type"`
			Param   *string `json:"param"`
			Code    *string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		t.Fatalf("body is not JSON: %s", body)
	}
	gotParam := ""
	if env.Error.Param != nil {
		gotParam = *env.Error.Param
	}
	if resp.StatusCode != status || env.Error.Type != errType || gotParam != param || !strings.Contains(env.Error.Message, mention) {
		t.Fatalf("got %d %s, want %d %s param %q mentioning %q", resp.StatusCode, body, status, errType, param, mention)
	}
	if strings.Contains(string(body), `"type":"error"`) {
		t.Fatalf("an Anthropic envelope on an OpenAI path: %s", body)
	}
}

// Bad chat input gets a 400 that names the field, in the OpenAI shape,
// through the SDK as well; nothing reaches the CLI.
func TestChatBadRequestsNameTheField(t *testing.T) {
	t.Parallel()
	path, scriptEnv := testkit.FakeClaude(t) // never started: every request here is refused first
	s := newStack(t, stackOptions{claudePath: path, env: []string{scriptEnv}, maxBodyBytes: 4096})
	user := `{"role":"user","content":"hi"}`
	cases := []struct {
		name, body, param, mention string
		status                     int
	}{
		{"malformed JSON", `{"model":"m","messages":[`, "", "malformed JSON", 400},
		{"model not a string", `{"model":3,"messages":[` + user + `]}`, "model", "expected a string", 400},
		{"unknown role", `{"model":"m","messages":[{"role":"robot","content":"hi"}]}`, "messages.0.role", "must be one of", 400},
		{"content wrong type", `{"model":"m","messages":[{"role":"user","content":{"text":"hi"}}]}`, "messages.0.content", "expected a string or an array", 400},
		{"tool without call", `{"model":"m","messages":[` + user + `,{"role":"assistant","content":"ok"},{"role":"tool","tool_call_id":"call_9","content":"r"}]}`,
			"messages.2.tool_call_id", `"call_9" answers no open tool call`, 400},
		{"n 2", `{"model":"m","n":2,"messages":[` + user + `]}`, "n", "only n: 1", 400},
		{"logprobs", `{"model":"m","logprobs":true,"messages":[` + user + `]}`, "logprobs", "not available", 400},
		{"audio part", `{"model":"m","messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"UklGRg==","format":"wav"}}]}]}`,
			"messages.0.content.0", "taken by the Antigravity backend", 400},
		{"too large", `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("x", 5000) + `"}]}`, "", "exceeds 4096 bytes", 413},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, route := range []string{"/v1/chat/completions", "/chat/completions"} {
				resp, body := do(t, http.MethodPost, s.URL+route, c.body, map[string]string{"Content-Type": "application/json"})
				typ := "invalid_request_error"
				openAIError(t, resp, body, c.status, typ, c.param, c.mention)
			}
		})
	}
	// Through the SDK, a tool result for a call that was never made.
	_, err := s.chatClient().Chat.Completions.New(context.Background(), chatParams(openai.UserMessage("hi"), openai.ToolMessage("r", "call_x")))
	var ae *openai.Error
	if !errors.As(err, &ae) || ae.StatusCode != 400 || ae.Param != "messages.1.role" {
		t.Fatalf("SDK error = %v", err)
	}
	if pids := testkit.Processes(s.Marker); len(pids) > 0 {
		t.Fatalf("a refused request started claude: %v", pids)
	}
}

// 404s and 405s on OpenAI paths answer in the OpenAI shape; so does a
// missing API key there, and the OpenAI model list answers the SDK.
func TestChatRoutesAnswerInTheOpenAIShape(t *testing.T) {
	t.Parallel()
	path, scriptEnv := testkit.FakeClaude(t)
	s := newStack(t, stackOptions{claudePath: path, env: []string{scriptEnv}, apiKey: "secret"})
	key := map[string]string{"Authorization": "Bearer secret"}

	resp, body := do(t, http.MethodPost, s.URL+"/v1/chat/complete", "{}", key)
	openAIError(t, resp, body, 404, "invalid_request_error", "", "/v1/chat/complete")
	resp, body = do(t, http.MethodPost, s.URL+"/v1/completions", "{}", key)
	openAIError(t, resp, body, 404, "invalid_request_error", "", "/v1/completions")
	resp, body = do(t, http.MethodGet, s.URL+"/v1/chat/completions", "", key)
	openAIError(t, resp, body, 405, "invalid_request_error", "", "GET")
	resp, body = do(t, http.MethodPost, s.URL+"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, nil)
	openAIError(t, resp, body, 401, "authentication_error", "", "API key")

	// The Anthropic side keeps its own shape.
	resp, body = do(t, http.MethodGet, s.URL+"/v1/nothing-here", "", key)
	anthropicError(t, resp, body, 404, "not_found_error", "/v1/nothing-here")
}

// Parameters the CLI cannot take are named in X-Meridian-Ignored-Params;
// the default tool choice is not among them.
func TestChatIgnoredParametersAreReported(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	s.Upstream.Always(testkit.Reply{Text: "ok"})
	p := chatParams(openai.UserMessage("hi"))
	p.Temperature = openai.Float(0.2)
	p.Seed = openai.Int(7)
	p.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("auto")}
	p.Tools = chatTools()
	var resp *http.Response
	if _, err := s.chatClient().Chat.Completions.New(context.Background(), p, oaioption.WithResponseInto(&resp)); err != nil {
		t.Fatal(err)
	}
	if got := resp.Header.Get("X-Meridian-Ignored-Params"); got != "temperature, seed" {
		t.Fatalf("X-Meridian-Ignored-Params = %q", got)
	}
	p.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("required")}
	if _, err := s.chatClient().Chat.Completions.New(context.Background(), p, oaioption.WithResponseInto(&resp)); err != nil {
		t.Fatal(err)
	}
	if got := resp.Header.Get("X-Meridian-Ignored-Params"); got != "tool_choice, temperature, seed" {
		t.Fatalf("X-Meridian-Ignored-Params = %q", got)
	}
}
