package e2e

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	oaioption "github.com/openai/openai-go/v3/option"
)

// schemas lists the --json-schema schemas agy read at its session starts.
func (g *agyGateway) schemas() []string {
	var out []string
	for _, c := range g.calls() {
		if s, ok := c["json_schema"].(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// Structured output runs through agy's own schema mode: the request's
// schema is the session's --json-schema, and the answer is the value agy's
// result carries, alone (its prose and JSON line are not passed on), on
// Messages and Chat; a turn agy ends without the value is a 502 naming the
// field. Stop sequences cut agy's answer where they match, and the
// conversation goes on from the answer the client got.
func TestAntigravityStructuredOutputAndStopSequences(t *testing.T) {
	t.Parallel()
	g := newAgyGateway(t, map[string]any{"turns": []map[string]any{
		{"match": "weather", "steps": []any{agyAnswer("Looking it up.\n", 20, 4)}, "structured": map[string]any{"city": "Oslo", "temp_c": 12}},
		{"match": "ramble", "steps": []any{agyAnswer("A lovely day.\n", 10, 3)}},
		{"match": "count", "steps": []any{agyAnswer("one two STOP three four\n", 10, 6)}},
	}})
	g.start()
	ctx := context.Background()
	p := agyParams("the weather in Oslo")
	p.OutputConfig = sdk.OutputConfigParam{Format: sdk.JSONOutputFormatParam{Schema: weatherSchema}}
	msg, err := g.client("structured-1").Messages.New(ctx, p)
	if err != nil || len(msg.Content) != 1 || msg.Content[0].Text != `{"city":"Oslo","temp_c":12}` {
		t.Fatalf("structured answer: %v %s\n%s", err, msg.RawJSON(), g.log.String())
	}
	if s := g.schemas(); len(s) != 1 || !strings.Contains(s[0], `"required":["city","temp_c"]`) {
		t.Fatalf("agy's --json-schema: %q", s)
	}
	for _, md := range g.agentsMD() {
		if strings.Contains(md, "JSON Schema") {
			t.Fatalf("the schema was asked for in agy's instructions too: %q", md)
		}
	}

	p = agyParams("ramble on")
	p.OutputConfig = sdk.OutputConfigParam{Format: sdk.JSONOutputFormatParam{Schema: weatherSchema}}
	_, err = g.client("structured-2").Messages.New(ctx, p)
	var apiErr *sdk.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadGateway || !strings.Contains(apiErr.Error(), "output_config.format") {
		t.Fatalf("an answer without the value: %v", err)
	}

	oc := openai.NewClient(oaioption.WithBaseURL(g.url+"/v1"), oaioption.WithAPIKey("client-key"), oaioption.WithMaxRetries(0))
	c, err := oc.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gemini-3.8-flash-low",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("the weather in Oslo, as chat")},
		ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &openai.ResponseFormatJSONSchemaParam{
			JSONSchema: openai.ResponseFormatJSONSchemaJSONSchemaParam{Name: "weather", Schema: weatherSchema}}}})
	if err != nil || c.Choices[0].Message.Content != `{"city":"Oslo","temp_c":12}` {
		t.Fatalf("chat: %v %+v", err, c)
	}

	p = agyParams("count to four")
	p.StopSequences = []string{"STOP"}
	msg, err = g.client("stops").Messages.New(ctx, p)
	if err != nil || msg.StopReason != sdk.StopReasonStopSequence || msg.StopSequence != "STOP" || msg.Content[0].Text != "one two " {
		t.Fatalf("stop sequence: %v %s", err, msg.RawJSON())
	}
	p.Messages = append(p.Messages, msg.ToParam(), sdk.NewUserMessage(sdk.NewTextBlock("and again, count")))
	msg, err = g.client("stops").Messages.New(ctx, p)
	if err != nil || msg.Content[0].Text != "one two " {
		t.Fatalf("the turn after a stop sequence: %v %s", err, msg.RawJSON())
	}
	// agy's conversation went on past the cut, and agy cannot go back: the
	// next turn replays the history as the client has it.
	in := g.stdin()
	if last := in[len(in)-1]; !strings.Contains(last, "one two") || strings.Contains(last, "three four") {
		t.Fatalf("the turn after the cut reached agy as %s", last)
	}
}
