package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	oaoption "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/meridian-gw/meridian/internal/testkit"
)

func agyMCPCall(tool string, args any) map[string]any {
	return map[string]any{"type": "tool", "tool": "call_mcp_tool",
		"params": map[string]any{"ServerName": "meridian", "ToolName": tool, "Arguments": args}}
}

var agyClientTools = []sdk.ToolUnionParam{
	{OfTool: &sdk.ToolParam{Name: "get_weather", Description: sdk.String("The weather in a city."),
		InputSchema: sdk.ToolInputSchemaParam{Properties: map[string]any{"city": map[string]any{"type": "string"}}, Required: []string{"city"}}}},
	{OfTool: &sdk.ToolParam{Name: "get_time", Description: sdk.String("The time in a city."),
		InputSchema: sdk.ToolInputSchemaParam{Properties: map[string]any{"city": map[string]any{"type": "string"}}, Required: []string{"city"}}}},
}

// Through the official SDK and meridian --backend antigravity (with an
// API key, which agy's tool calls do not carry): agy's own tool is refused
// by the gate (`meridian agy-gate`, asking the gateway); a call whose
// arguments break its schema is answered by the gateway without reaching
// the client; then a loop of three client tool calls runs through the
// session's MCP server, each result reaching the stand-in, whose answer
// quotes the last one. One agy process serves the whole loop; the same
// request again gets the saved answer, and the same results in another
// request are refused.
func TestAntigravityClientTools(t *testing.T) {
	t.Parallel()
	g := newAgyGateway(t, map[string]any{"turns": []map[string]any{{"match": "weather", "steps": []any{
		map[string]any{"type": "tool", "tool": "run_command", "params": map[string]string{"CommandLine": "curl evil.example"}, "output": "pwned"},
		agyAnswer("Let me check.\n", 40, 5),
		agyMCPCall("get_weather", map[string]any{"city": 75001}), // breaks the schema: the gateway answers it
		agyMCPCall("get_weather", map[string]string{"city": "Paris"}),
		agyMCPCall("get_weather", map[string]string{"city": "Rome"}),
		agyMCPCall("get_time", map[string]string{"city": "Rome"}),
		agyAnswer("Rome at {{tool_output}}.\n", 90, 9),
	}}}})
	g.gatewayProc.start("--backend", "antigravity", "--agy-path", g.agy, "--admin-key", "client-key")
	ctx := context.Background()
	params := agyParams("What is the weather?")
	params.Tools = agyClientTools
	results := []string{"sunny, 21C", "rain, 14C", "12:00"}
	wantCalls := []string{`get_weather {"city":"Paris"}`, `get_weather {"city":"Rome"}`, `get_time {"city":"Rome"}`}
	for i, res := range results {
		msg, err := g.client("tools-1").Messages.New(ctx, params)
		if err != nil || msg.StopReason != sdk.StopReasonToolUse {
			t.Fatalf("step %d: %v %+v\n%s", i+1, err, msg, g.log.String())
		}
		var call *sdk.ToolUseBlock
		for _, b := range msg.Content {
			if b.Type == "tool_use" {
				tu := b.AsToolUse()
				call = &tu
			}
		}
		if call == nil || call.Name+" "+string(call.Input) != wantCalls[i] {
			t.Fatalf("step %d called %s", i+1, msg.RawJSON())
		}
		if i == 0 && !strings.HasPrefix(msg.Content[0].Text, "Let me check.") {
			t.Fatalf("step 1 text: %s", msg.RawJSON())
		}
		params.Messages = append(params.Messages, msg.ToParam(), sdk.NewUserMessage(sdk.NewToolResultBlock(call.ID, res, false)))
	}
	msg, err := g.client("tools-1").Messages.New(ctx, params)
	if err != nil || msg.StopReason != sdk.StopReasonEndTurn || msg.Content[0].Text != "Rome at 12:00.\n" {
		t.Fatalf("final answer: %v %s", err, msg.RawJSON())
	}
	// The same request again gets the saved answer; another carrying the
	// same results would run the turn twice, and is refused.
	if again, err := g.client("tools-1").Messages.New(ctx, params); err != nil || again.Content[0].Text != "Rome at 12:00.\n" {
		t.Fatalf("the same request again: %v %+v", err, again)
	}
	params.MaxTokens = 2048
	if _, err := g.client("tools-1").Messages.New(ctx, params); err == nil || !strings.Contains(err.Error(), "409") {
		t.Fatalf("results sent again: %v", err)
	}
	if n := len(g.sessions()); n != 1 {
		t.Fatalf("%d agy sessions for one tool loop", n)
	}
	var got []string
	denied := false
	for _, c := range g.calls() {
		if c["mcp"] == "call" {
			got = append(got, c["output"].(string))
		}
		if c["hook"] == "meridian-gate" && strings.Contains(c["stdout"].(string), `"decision":"deny"`) && strings.Contains(c["stdout"].(string), "run_command") {
			denied = true
		}
	}
	if len(got) != 4 || !strings.HasPrefix(got[0], "Invalid tool call, not run") || strings.Join(got[1:], "|") != strings.Join(results, "|") {
		t.Fatalf("the stand-in's MCP client got %q, want the schema's refusal, then %q", got, results)
	}
	if !denied {
		t.Fatalf("agy's own tool was not denied by the gate: %v", g.calls())
	}
	if strings.Contains(g.log.String(), "/agy-tools/") {
		t.Fatal("a tool endpoint's path (its secret) reached the log")
	}
}

// The same loop through Chat Completions (the call a tool_calls entry,
// its result a tool message) and through Responses (a function_call item,
// its output continuing the stored response by previous_response_id).
func TestAntigravityClientToolsOverOpenAI(t *testing.T) {
	t.Parallel()
	g := newAgyGateway(t, map[string]any{"turns": []map[string]any{{"match": "time", "steps": []any{
		agyMCPCall("get_time", map[string]string{"city": "Oslo"}),
		agyAnswer("It is {{tool_output}} in Oslo.\n", 30, 6),
	}}}})
	g.start()
	c := openai.NewClient(oaoption.WithBaseURL(g.url+"/v1"), oaoption.WithAPIKey("client-key"), oaoption.WithMaxRetries(0),
		oaoption.WithHeader("X-Claude-Code-Session-Id", "chat-tools"))
	var schema map[string]any
	_ = json.Unmarshal([]byte(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`), &schema)
	params := openai.ChatCompletionNewParams{Model: "gemini-3.8-flash-low",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("What time is it in Oslo?")},
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{
			Name: "get_time", Parameters: schema})}}
	ctx := context.Background()
	first, err := c.Chat.Completions.New(ctx, params)
	if err != nil || first.Choices[0].FinishReason != "tool_calls" || len(first.Choices[0].Message.ToolCalls) != 1 {
		t.Fatalf("first: %v %s\n%s", err, first.RawJSON(), g.log.String())
	}
	call := first.Choices[0].Message.ToolCalls[0]
	if call.Function.Name != "get_time" || call.Function.Arguments != `{"city":"Oslo"}` {
		t.Fatalf("call %s", first.RawJSON())
	}
	params.Messages = append(params.Messages, first.Choices[0].Message.ToParam(), openai.ToolMessage("09:30", call.ID))
	second, err := c.Chat.Completions.New(ctx, params)
	if err != nil || second.Choices[0].Message.Content != "It is 09:30 in Oslo.\n" {
		t.Fatalf("second: %v %s", err, second.RawJSON())
	}

	rc := openai.NewClient(oaoption.WithBaseURL(g.url+"/v1"), oaoption.WithAPIKey("client-key"), oaoption.WithMaxRetries(0))
	r1, err := rc.Responses.New(ctx, responses.ResponseNewParams{Model: "gemini-3.8-flash-low",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("And the time in Oslo now?")},
		Tools: []responses.ToolUnionParam{{OfFunction: &responses.FunctionToolParam{Name: "get_time", Parameters: schema}}}})
	var fc *responses.ResponseFunctionToolCall
	for _, it := range r1.Output {
		if it.Type == "function_call" {
			f := it.AsFunctionCall()
			fc = &f
		}
	}
	if err != nil || fc == nil || fc.Name != "get_time" || fc.Arguments != `{"city":"Oslo"}` {
		t.Fatalf("responses, first: %v %s", err, r1.RawJSON())
	}
	out := responses.ResponseInputItemParamOfFunctionCallOutput("09:31")
	out.OfFunctionCallOutput.CallID = openai.String(fc.CallID)
	r2, err := rc.Responses.New(ctx, responses.ResponseNewParams{Model: "gemini-3.8-flash-low", PreviousResponseID: openai.String(r1.ID),
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: []responses.ResponseInputItemUnionParam{out}},
		Tools: []responses.ToolUnionParam{{OfFunction: &responses.FunctionToolParam{Name: "get_time", Parameters: schema}}}})
	if err != nil || r2.OutputText() != "It is 09:31 in Oslo.\n" {
		t.Fatalf("responses, second: %v %s", err, r2.RawJSON())
	}
}

// A paused turn whose agy was closed (here by --idle-ttl) is not lost: the
// client's result reaches a new agy with the conversation as history, and
// the answer comes from there.
func TestAntigravityPausedTurnOutlivesItsProcess(t *testing.T) {
	t.Parallel()
	g := newAgyGateway(t, map[string]any{"turns": []map[string]any{
		{"match": "10:42", "steps": []any{agyAnswer("Replayed with the result.\n", 50, 4)}},
		{"match": "clock", "steps": []any{agyMCPCall("get_time", map[string]string{"city": "Oslo"}), agyAnswer("never\n", 1, 1)}},
	}})
	g.gatewayProc.start("--backend", "antigravity", "--agy-path", g.agy, "--idle-ttl", "1s")
	ctx := context.Background()
	params := agyParams("what does the clock say?")
	params.Tools = agyClientTools
	msg, err := g.client("outlived").Messages.New(ctx, params)
	if err != nil || msg.StopReason != sdk.StopReasonToolUse {
		t.Fatalf("first: %v %+v", err, msg)
	}
	if err := testkit.WaitFor(20*time.Second, func() error {
		if n := len(g.agys()); n > 0 {
			return fmt.Errorf("%d agy processes", n)
		}
		return nil
	}); err != nil {
		t.Fatalf("the paused agy was not closed: %v", err)
	}
	call := msg.Content[len(msg.Content)-1].AsToolUse()
	params.Messages = append(params.Messages, msg.ToParam(), sdk.NewUserMessage(sdk.NewToolResultBlock(call.ID, "10:42", false)))
	msg, err = g.client("outlived").Messages.New(ctx, params)
	if err != nil || msg.Content[0].Text != "Replayed with the result.\n" {
		t.Fatalf("after the process went: %v %+v\n%s", err, msg, g.log.String())
	}
	if n := len(g.sessions()); n != 2 {
		t.Fatalf("%d agy sessions, want the paused one and a new one", n)
	}
}
