package e2e

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	oaioption "github.com/openai/openai-go/v3/option"
)

// agentsMD lists the AGENTS.md texts agy found at its session starts.
func (g *agyGateway) agentsMD() []string {
	var out []string
	for _, c := range g.calls() {
		if found, ok := c["agents_md"].([]any); ok {
			var all []string
			for _, f := range found {
				all = append(all, f.(string))
			}
			out = append(out, strings.Join(all, "\n"))
		}
	}
	return out
}

// The client's system prompt reaches agy as its session's instructions
// (the AGENTS.md of the session folder, which agy reads), in every process
// of the conversation, a resumed one too; chat's JSON-format instruction
// with it. agy bounds no answer's length, so the request's output limit is
// named ignored, in the client's own field.
func TestAntigravityGetsTheSystemPromptAndReportsTheOutputLimit(t *testing.T) {
	t.Parallel()
	g := newAgyGateway(t, map[string]any{"turns": []map[string]any{
		{"steps": []any{agyAnswer("Following: {{instructions}}\n", 10, 2)}},
	}})
	g.start()
	c := g.client("instructed")
	p := agyParams("first")
	p.System = []sdk.TextBlockParam{{Text: "Always answer like a pirate."}}
	var resp *http.Response
	msg, err := c.Messages.New(context.Background(), p, option.WithResponseInto(&resp))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(msg.Content[0].Text, "Always answer like a pirate.") {
		t.Fatalf("agy did not have the system prompt: %q", msg.Content[0].Text)
	}
	if got := resp.Header.Get("X-Meridian-Ignored-Params"); !strings.Contains(got, "max_tokens") {
		t.Fatalf("the ignored output limit is not reported: %q", got)
	}
	// After a restart the conversation continues in a new agy, which is
	// given the instructions again.
	g.stop()
	g.start()
	p.Messages = append(p.Messages, msg.ToParam(), sdk.NewUserMessage(sdk.NewTextBlock("second")))
	if _, err := g.client("instructed").Messages.New(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	md := g.agentsMD()
	if len(md) < 2 || !strings.Contains(md[len(md)-1], "Always answer like a pirate.") {
		t.Fatalf("AGENTS.md at each start: %q", md)
	}
	// Chat: the format goes to agy as its --json-schema (agy enforces
	// it), not as an instruction, and max_completion_tokens is the field
	// named.
	oc := openai.NewClient(oaioption.WithBaseURL(g.url+"/v1"), oaioption.WithAPIKey("client-key"), oaioption.WithMaxRetries(0))
	var cresp *http.Response
	_, _ = oc.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "gemini-3.8-flash-low", MaxCompletionTokens: openai.Int(50),
		Messages:       []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("Be brief."), openai.UserMessage("json please")},
		ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONObject: &openai.ResponseFormatJSONObjectParam{}},
	}, oaioption.WithResponseInto(&cresp))
	md = g.agentsMD()
	if last := md[len(md)-1]; !strings.Contains(last, "Be brief.") || strings.Contains(last, "JSON object") {
		t.Fatalf("chat's instructions reached agy as %q", last)
	}
	if schemas := g.schemas(); len(schemas) != 1 || schemas[0] != `{"type":"object"}` {
		t.Fatalf("agy's --json-schema: %q", schemas)
	}
	if cresp == nil || !strings.Contains(cresp.Header.Get("X-Meridian-Ignored-Params"), "max_completion_tokens") {
		t.Fatalf("chat's ignored output limit: %v", cresp)
	}
}

// A client's compaction (its history's beginning rewritten as a summary,
// its end kept) is not continued in agy's old conversation, whose context
// would keep all it compacted away: the compacted history is replayed
// into a new conversation.
func TestAntigravityCompactionReplaysIntoANewConversation(t *testing.T) {
	t.Parallel()
	g := newAgyGateway(t, map[string]any{"turns": []map[string]any{
		{"match": "q3", "steps": []any{agyAnswer("a3\n", 10, 1)}},
		{"match": "q2", "steps": []any{agyAnswer("a2\n", 10, 1)}},
		{"match": "q1", "steps": []any{agyAnswer("a1\n", 10, 1)}},
	}})
	g.start()
	ctx := context.Background()
	c := g.client("compacted")
	for i, h := range [][]string{{"q1"}, {"q1", "a1\n", "q2"}, {"q1", "a1\n", "q2", "a2\n", "q3"}} {
		if _, err := c.Messages.New(ctx, agyParams(h...)); err != nil {
			t.Fatalf("turn %d: %v", i+1, err)
		}
	}
	first := g.sessions()
	compacted := []string{"Summary: q1 and q2 were answered.", "Noted.\n", "q3", "a3\n", "q4"}
	if _, err := c.Messages.New(ctx, agyParams(compacted...)); err != nil {
		t.Fatal(err)
	}
	sessions, in := g.sessions(), g.stdin()
	last := sessions[len(sessions)-1]
	if len(sessions) != len(first)+1 || slices.Contains(last, "--conversation") {
		t.Fatalf("the compaction continued agy's old conversation: %q", last)
	}
	if got := in[len(in)-1]; !strings.Contains(got, "Summary: q1 and q2") || !strings.Contains(got, "q4") || strings.Contains(got, "q1\n") {
		t.Fatalf("agy was given %q, want the compacted history", got)
	}
}
