package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	oaioption "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"

	mresponses "github.com/meridian-gw/meridian/internal/responses"
	"github.com/meridian-gw/meridian/internal/testkit"
)

// A json_schema text format reaches the model as the CLI's
// StructuredOutput tool and the value it gives is the answer; a model
// that never gives one that fits, or answers in prose, is a 502.
func TestResponsesJSONSchemaFormat(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{sessions: true})
	p := respParams("a person")
	p.Text = responses.ResponseTextConfigParam{Format: responses.ResponseFormatTextConfigUnionParam{OfJSONSchema: &responses.ResponseFormatTextJSONSchemaConfigParam{
		Name: "person", Schema: map[string]any{"type": "object", "properties": map[string]any{"age": map[string]any{"type": "integer"}}, "required": []string{"age"}},
	}}}
	gives := func(age any) testkit.Responder {
		return func(r testkit.Request) testkit.Reply {
			if strings.Contains(r.AllText(), "Structured output provided") {
				return testkit.Reply{}
			}
			return testkit.Reply{ToolUses: []testkit.ToolUse{{Name: "StructuredOutput", Input: map[string]any{"age": age}}}}
		}
	}
	s.Upstream.Respond(gives(36))
	got, err := s.chatClient().Responses.New(context.Background(), p)
	if err != nil || got.OutputText() != `{"age":36}` {
		t.Fatalf("fit: %v %s", err, got.RawJSON())
	}
	if tool, _ := json.Marshal(s.Upstream.Requests()[0].Body["tools"]); !strings.Contains(string(tool), `"StructuredOutput"`) || !strings.Contains(string(tool), `"required":["age"]`) {
		t.Fatalf("the schema did not reach the model as the CLI's tool: %s", tool)
	}
	s.Upstream.Respond(gives("old"))
	final, _, err := streamResponse(t, s.chatClient(), p)
	// The error names the field the request used: text.format, not chat's
	// response_format.
	if err != nil || final.Status != "failed" || !strings.Contains(final.Error.Message, "text.format") || strings.Contains(final.Error.Message, "response_format") {
		t.Fatalf("streamed misfit: %v %s", err, final.RawJSON())
	}
	s.Upstream.Always(testkit.Reply{Text: `not json`})
	_, err = s.chatClient().Responses.New(context.Background(), p)
	if ae := chatAPIError(t, err); ae.StatusCode != 502 {
		t.Fatalf("misfit: %d %s", ae.StatusCode, ae.RawJSON())
	}
}

// An upstream 429 before anything streamed is a 429 with Retry-After; one
// after the stream began ends it with response.failed carrying the wait.
func TestResponsesRateLimit(t *testing.T) {
	t.Parallel()
	t.Run("before", func(t *testing.T) {
		t.Parallel()
		s := newStack(t, stackOptions{sessions: true})
		s.Upstream.Always(testkit.Reply{Status: 429})
		for _, stream := range []bool{false, true} {
			var err error
			if stream {
				_, _, err = streamResponse(t, s.chatClient(), respParams("hi"))
			} else {
				_, err = s.chatClient().Responses.New(context.Background(), respParams("hi"))
			}
			ae := chatAPIError(t, err)
			if ae.StatusCode != 429 || ae.Code != "rate_limit_exceeded" || ae.Response.Header.Get("Retry-After") != "60" {
				t.Fatalf("stream=%v: %d %s %q", stream, ae.StatusCode, ae.RawJSON(), ae.Response.Header.Get("Retry-After"))
			}
		}
	})
	t.Run("after", func(t *testing.T) {
		t.Parallel()
		s := newStack(t, stackOptions{sessions: true, env: []string{"ANTHROPIC_API_KEY=", "CLAUDE_CODE_OAUTH_TOKEN=test-oauth-token"}})
		reset := time.Now().Add(90 * time.Minute)
		s.Upstream.Enqueue(testkit.Reply{Text: "Let me look.", ToolUses: []testkit.ToolUse{{Name: "read", Input: map[string]any{"path": "x"}}}})
		s.Upstream.Always(testkit.Reply{Status: 429, Headers: unifiedReset(reset, "rejected")})
		final, types, err := streamResponse(t, s.chatClient(), respParams("look it up"))
		if err != nil {
			t.Fatal(err)
		}
		want := int(time.Until(reset).Seconds())
		var e struct {
			Code       string `json:"code"`
			RetryAfter int    `json:"retry_after"`
		}
		_ = json.Unmarshal([]byte(final.Error.RawJSON()), &e)
		if types[len(types)-1] != "response.failed" || e.Code != "rate_limit_exceeded" || e.RetryAfter < want-10 || e.RetryAfter > want+10 {
			t.Fatalf("ended with %v: %s, want retry_after about %d", types[len(types)-1], final.Error.RawJSON(), want)
		}
		if final.OutputText() != "Let me look." {
			t.Fatalf("output before the failure: %s", final.RawJSON())
		}
	})
}

// Bad items are refused with 400 naming the field; nothing reaches claude.
func TestResponsesBadItems(t *testing.T) {
	t.Parallel()
	path, scriptEnv := testkit.FakeClaude(t)
	s := newStack(t, stackOptions{claudePath: path, env: []string{scriptEnv}, sessions: true})
	for _, c := range []struct{ body, param, mention string }{
		{`{"model":"m","input":[{"type":"function_call_output","call_id":"call_9","output":"r"}]}`, "input.0.call_id", `"call_9" answers no open function_call`},
		{`{"model":"m","input":[{"type":"local_shell_call","id":"x"}]}`, "input.0.type", "unsupported input item type"},
		{`{"model":"m","input":[{"role":"user","content":[{"type":"output_text","text":"x"}]}]}`, "input.0.content.0.type", "unsupported content part"},
		{`{"model":"m","input":"x","previous_response_id":"resp_nope"}`, "previous_response_id", "not found"},
	} {
		resp, body := do(t, http.MethodPost, s.URL+"/v1/responses", c.body, nil)
		openAIError(t, resp, body, 400, "invalid_request_error", c.param, c.mention)
	}
	if pids := testkit.Processes(s.Marker); len(pids) > 0 {
		t.Fatalf("a refused request started claude: %v", pids)
	}
}

// Namespace tools reach the model under flat names and its calls come
// back under their namespace; hosted tools are reported as ignored.
func TestResponsesNamespaceAndHostedTools(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{sessions: true})
	s.Upstream.Always(testkit.Reply{ToolUses: []testkit.ToolUse{{ID: "toolu_ns", Name: modelName("agents__spawn"), Input: map[string]any{"task": "t"}}}})
	p := respParams("delegate")
	p.Tools = []responses.ToolUnionParam{
		{OfNamespace: &responses.NamespaceToolParam{Name: "agents", Description: "agent tools", Tools: []responses.NamespaceToolToolUnionParam{
			{OfFunction: &responses.NamespaceToolToolFunctionParam{Name: "spawn", Parameters: map[string]any{"type": "object", "properties": map[string]any{"task": map[string]any{"type": "string"}}}}},
		}}},
		{OfFileSearch: &responses.FileSearchToolParam{VectorStoreIDs: []string{"vs_1"}}},
	}
	var resp *http.Response
	got, err := s.chatClient().Responses.New(context.Background(), p, oaioption.WithResponseInto(&resp))
	if err != nil {
		t.Fatal(err)
	}
	cs := calls(got)
	if len(cs) != 1 || cs[0].Name != "spawn" || cs[0].Namespace != "agents" || cs[0].CallID != "toolu_ns" {
		t.Fatalf("calls = %s", got.RawJSON())
	}
	if ig := resp.Header.Get("X-Meridian-Ignored-Params"); ig != "tools: file_search" {
		t.Fatalf("X-Meridian-Ignored-Params = %q", ig)
	}
	tools := s.Upstream.Requests()[0].Body["tools"].([]any)
	if len(tools) != 1 || tools[0].(map[string]any)["name"] != modelName("agents__spawn") {
		t.Fatalf("tools offered upstream: %v", tools)
	}
}

// Stored responses: get, input items, delete; a deleted one is gone.
func TestResponsesStoredRoutes(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{sessions: true})
	s.Upstream.Always(testkit.Reply{Text: "kept"})
	c := s.chatClient()
	got, err := c.Responses.New(context.Background(), itemsParams(
		responses.ResponseInputItemParamOfMessage("first", responses.EasyInputMessageRoleUser),
		responses.ResponseInputItemParamOfMessage("second", responses.EasyInputMessageRoleUser)))
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.Responses.Get(context.Background(), got.ID, responses.ResponseGetParams{})
	if err != nil || again.OutputText() != "kept" || again.Status != "completed" {
		t.Fatalf("get: %v %s", err, again.RawJSON())
	}
	items, err := c.Responses.InputItems.List(context.Background(), got.ID, responses.InputItemListParams{Order: responses.InputItemListParamsOrderAsc})
	if err != nil || len(items.Data) != 2 || items.Data[0].ID == "" {
		t.Fatalf("input items: %v %+v", err, items)
	}
	if raw := items.Data[1].RawJSON(); !strings.Contains(raw, `"text":"second"`) {
		t.Fatalf("input items: %s", items.RawJSON())
	}
	if err := c.Responses.Delete(context.Background(), got.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Responses.Get(context.Background(), got.ID, responses.ResponseGetParams{}); chatAPIError(t, err).StatusCode != 404 {
		t.Fatalf("after delete: %v", err)
	}
	// store: false keeps nothing.
	p := respParams("not kept")
	p.Store = param.NewOpt(false)
	gone, err := c.Responses.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Responses.Get(context.Background(), gone.ID, responses.ResponseGetParams{}); chatAPIError(t, err).StatusCode != 404 {
		t.Fatalf("store: false was kept: %v", err)
	}
}

// A background response running when meridian stops is recorded failed,
// never left in progress; the stream a client follows ends.
func TestResponsesBackgroundEndsWithTheServer(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{sessions: true})
	s.Upstream.Always(testkit.Reply{Text: "never", Hang: true})
	p := respParams("run long")
	p.Background = openai.Bool(true)
	got, err := s.chatClient().Responses.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return len(s.Upstream.Requests()) == 1 })
	s.stop()
	rs, _ := openResponses(t, s.DataDir, mresponses.Config{})
	rec, err := rs.Get(context.Background(), mresponses.Scope("client-key"), got.ID)
	if err != nil || rec.Status != "failed" || !strings.Contains(string(rec.Response), "shut down before this response finished") {
		t.Fatalf("after stop: %v %s %s", err, rec.Status, rec.Response)
	}
	testkit.WaitNoProcesses(t, s.Marker, 5*time.Second)
}
