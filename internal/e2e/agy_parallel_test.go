package e2e

import (
	"context"
	"strings"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
)

// agyParallel is a call of the session's parallel tool: three client
// calls in one, the second asking for city.
func agyParallel(city any) map[string]any {
	return agyMCPCall("parallel_calls", map[string]any{"calls": []any{
		map[string]any{"tool": "get_weather", "arguments": map[string]any{"city": "Paris"}},
		map[string]any{"tool": "get_weather", "arguments": map[string]any{"city": city}},
		map[string]any{"tool": "get_time", "arguments": map[string]any{"city": "Rome"}},
	}})
}

// One agy response carrying three client calls (through the session's
// parallel tool, one tools/call) reaches the client as one batch, in one
// round trip; answered in reverse order, the turn continues with every
// result in the order of the calls. A batch with one invalid call reaches
// the client not at all: agy's model gets the three errors, each naming
// the invalid call. The session's instructions describe the tools and the
// parallel tool.
func TestAntigravityParallelToolCalls(t *testing.T) {
	t.Parallel()
	g := newAgyGateway(t, map[string]any{"turns": []map[string]any{
		{"match": "invalid", "steps": []any{agyParallel(75001), agyAnswer("Got: {{tool_output}}\n", 10, 5)}},
		{"match": "weather", "steps": []any{agyAnswer("Checking three.\n", 10, 5), agyParallel("Rome"), agyAnswer("Got: {{tool_output}}\n", 50, 9)}},
	}})
	g.start()
	ctx := context.Background()

	params := agyParams("What is the weather?")
	params.Tools = agyClientTools
	msg, err := g.client("parallel-1").Messages.New(ctx, params)
	if err != nil || msg.StopReason != sdk.StopReasonToolUse {
		t.Fatalf("first: %v %+v\n%s", err, msg, g.log.String())
	}
	var calls []sdk.ToolUseBlock
	for _, b := range msg.Content {
		if b.Type == "tool_use" {
			calls = append(calls, b.AsToolUse())
		}
	}
	var got []string
	for _, c := range calls {
		got = append(got, c.Name+" "+string(c.Input))
	}
	if strings.Join(got, "|") != `get_weather {"city":"Paris"}|get_weather {"city":"Rome"}|get_time {"city":"Rome"}` {
		t.Fatalf("the client got %q in one response; want the three calls", got)
	}
	results := map[string]string{calls[0].ID: "sunny, 21C", calls[1].ID: "rain, 14C", calls[2].ID: "12:00"}
	var blocks []sdk.ContentBlockParamUnion
	for i := len(calls) - 1; i >= 0; i-- {
		blocks = append(blocks, sdk.NewToolResultBlock(calls[i].ID, results[calls[i].ID], false))
	}
	params.Messages = append(params.Messages, msg.ToParam(), sdk.NewUserMessage(blocks...))
	final, err := g.client("parallel-1").Messages.New(ctx, params)
	if err != nil || final.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("final: %v %+v", err, final)
	}
	text := final.Content[0].Text
	a, b, c := strings.Index(text, "call 1 of 3 (get_weather):sunny, 21C"), strings.Index(text, "call 2 of 3 (get_weather):rain, 14C"), strings.Index(text, "call 3 of 3 (get_time):12:00")
	if a < 0 || b < a || c < b {
		t.Fatalf("the model got %q; want the three results in the calls' order", text)
	}
	mcpCalls, guided := 0, false
	for _, e := range g.calls() {
		if e["mcp"] == "call" {
			mcpCalls++
		}
		if md, ok := e["agents_md"].([]any); ok && len(md) > 0 {
			s := md[0].(string)
			guided = strings.Contains(s, "## get_weather\nThe weather in a city.\nInput schema: {") && strings.Contains(s, `"required":["city"]`) &&
				strings.Contains(s, `"parallel_calls"`)
		}
	}
	if mcpCalls != 1 || !guided {
		t.Fatalf("agy made %d tool calls for the batch (want 1); tools described in its instructions: %v", mcpCalls, guided)
	}

	bad := agyParams("Try an invalid batch.")
	bad.Tools = agyClientTools
	msg, err = g.client("parallel-2").Messages.New(ctx, bad)
	if err != nil || msg.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("invalid batch: %v %s", err, msg.RawJSON())
	}
	for _, b := range msg.Content {
		if b.Type == "tool_use" {
			t.Fatalf("part of an invalid batch reached the client: %s", msg.RawJSON())
		}
	}
	text = msg.Content[0].Text
	if strings.Count(text, "failed:Invalid tool call batch, not run: 1 of the 3") != 3 || strings.Count(text, "call 2 of 3 (get_weather") != 3 {
		t.Fatalf("the model got %q; want all three calls refused, each naming the invalid one", text)
	}
}
