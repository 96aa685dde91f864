package e2e

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
	"github.com/openai/openai-go/v3"
	oaioption "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// The OpenAI routes answer through agy too (openai-go, chat completions
// streamed and not, and the Responses API), and /v1/models lists agy's
// models.
func TestAntigravityOpenAIRoutesAndModels(t *testing.T) {
	t.Parallel()
	g := newAgyGateway(t, map[string]any{"turns": []map[string]any{
		{"match": "chat", "steps": []any{agyAnswer("Chatting through agy.\n", 40, 4)}},
		{"match": "respond", "steps": []any{agyAnswer("A response from agy.\n", 30, 5)}},
	}, "usage": map[string]any{"groups": []any{map[string]any{"name": "Gemini Models", "buckets": []any{map[string]any{
		"id": "gemini-weekly", "name": "Weekly Limit Remaining", "window": "weekly", "remaining_fraction": 0.5, "reset_time": "2026-12-04T08:00:00Z"}}}}}})
	g.start()
	c := openai.NewClient(oaioption.WithBaseURL(g.url+"/v1"), oaioption.WithAPIKey("client-key"), oaioption.WithMaxRetries(0))
	ctx := context.Background()
	p := openai.ChatCompletionNewParams{Model: "gemini-3.8-flash-low", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("chat with me")}}
	got, err := c.Chat.Completions.New(ctx, p)
	if err != nil || got.Choices[0].Message.Content != "Chatting through agy.\n" || got.Usage.PromptTokens != 40 || got.Usage.CompletionTokens != 4 {
		t.Fatalf("chat: %v %+v", err, got)
	}
	st := c.Chat.Completions.NewStreaming(ctx, p)
	var acc openai.ChatCompletionAccumulator
	for st.Next() {
		acc.AddChunk(st.Current())
	}
	if err := st.Err(); err != nil || acc.Choices[0].Message.Content != "Chatting through agy.\n" {
		t.Fatalf("streamed chat: %v %+v", err, acc.ChatCompletion)
	}
	r, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: "gemini-3.8-flash-low",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("respond please")}})
	if err != nil || r.OutputText() != "A response from agy.\n" || r.Usage.OutputTokens != 5 {
		t.Fatalf("responses: %v %+v", err, r)
	}
	var resp *http.Response
	models, err := c.Models.List(ctx, oaioption.WithResponseInto(&resp))
	if err != nil || len(models.Data) != 4 || models.Data[1].ID != "gemini-3.8-flash-low" {
		t.Fatalf("models: %v %+v", err, models)
	}
	// Quota: agy's own buckets, from its /usage.
	if _, body := testkit.Get(t, g.url+"/v1/usage/quota"); !strings.Contains(body, `"name":"Gemini Models: Weekly Limit Remaining","utilization":50`) {
		t.Fatalf("quota: %s", body)
	}
}

// A base model id takes the variant the request's effort asks; without
// one it is refused naming the variants. The answer names the model that
// ran.
func TestAntigravityModelVariants(t *testing.T) {
	t.Parallel()
	g := newAgyGateway(t, nil)
	g.start()
	c := openai.NewClient(oaioption.WithBaseURL(g.url+"/v1"), oaioption.WithAPIKey("client-key"), oaioption.WithMaxRetries(0))
	p := openai.ChatCompletionNewParams{Model: "gemini-3.8-flash", ReasoningEffort: openai.ReasoningEffortHigh,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")}}
	got, err := c.Chat.Completions.New(context.Background(), p)
	if err != nil || got.Model != "gemini-3.8-flash-high" {
		t.Fatalf("with an effort: %v %+v", err, got)
	}
	last := g.sessions()[len(g.sessions())-1]
	if i := slices.Index(last, "--model"); i < 0 || last[i+1] != "gemini-3.8-flash-high" {
		t.Fatalf("agy ran as %q", last)
	}
	p.ReasoningEffort = ""
	_, err = c.Chat.Completions.New(context.Background(), p)
	var ae *openai.Error
	if !errors.As(err, &ae) || ae.StatusCode != 400 || !strings.Contains(ae.RawJSON(), "gemini-3.8-flash-low, gemini-3.8-flash-high") {
		t.Fatalf("without one: %v", err)
	}
}
