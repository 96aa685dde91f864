package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// weatherSchema is the structured output the tests ask for.
var weatherSchema = map[string]any{
	"type":                 "object",
	"properties":           map[string]any{"city": map[string]any{"type": "string"}, "temp_c": map[string]any{"type": "integer"}},
	"required":             []any{"city", "temp_c"},
	"additionalProperties": false,
}

// structuredUpstream is a model that fills the CLI's StructuredOutput
// tool when it is offered one, unless asked to ramble, when it answers in
// prose whatever it is told.
func structuredUpstream(r testkit.Request) testkit.Reply {
	all := r.AllText()
	switch {
	case strings.Contains(all, "ramble"):
		return testkit.Reply{Text: "It is a lovely day in Oslo, about twelve degrees."}
	case r.Offers("StructuredOutput") && !strings.Contains(all, "Structured output provided"):
		return testkit.Reply{Text: "Let me fill that in.", ToolUses: []testkit.ToolUse{{Name: "StructuredOutput", Input: map[string]any{"city": "Oslo", "temp_c": 12}}}}
	}
	return testkit.Reply{Text: "answer to " + r.LastUserText()}
}

// structuredAsked reports whether the CLI offered its StructuredOutput tool
// upstream: the schema went through the CLI's own mechanism.
func structuredAsked(up *testkit.Upstream) bool {
	for _, r := range up.Requests() {
		if r.Offers("StructuredOutput") {
			return true
		}
	}
	return false
}

// A schema'd request on each API is answered with the value the CLI's
// StructuredOutput tool took and checked, as the answer's only text; a
// model that answers in prose is a 502 naming the field, never prose
// passed off as the value; a spare serves a schema'd first turn.
func TestStructuredOutputThroughTheCLI(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	g.up.Respond(structuredUpstream)
	g.start()
	fits := func(t *testing.T, text string) {
		t.Helper()
		var v struct {
			City  string `json:"city"`
			TempC int    `json:"temp_c"`
		}
		if err := json.Unmarshal([]byte(text), &v); err != nil || v.City != "Oslo" || v.TempC != 12 {
			t.Fatalf("answer %q: %v", text, err)
		}
		if !structuredAsked(g.up) {
			t.Fatal("the upstream was never offered the StructuredOutput tool")
		}
	}
	client := sdk.NewClient(option.WithBaseURL(g.url), option.WithAPIKey("any"), option.WithMaxRetries(0))
	messages := func(prompt string) sdk.MessageNewParams {
		return sdk.MessageNewParams{Model: "test-model", MaxTokens: 200,
			OutputConfig: sdk.OutputConfigParam{Format: sdk.JSONOutputFormatParam{Schema: weatherSchema}},
			Messages:     []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock(prompt))}}
	}

	t.Run("messages", func(t *testing.T) {
		msg, err := client.Messages.New(context.Background(), messages("the weather in Oslo"))
		if err != nil {
			t.Fatal(err)
		}
		if len(msg.Content) != 1 {
			t.Fatalf("content %s", msg.RawJSON())
		}
		fits(t, msg.Content[0].Text)
	})

	t.Run("messages stream", func(t *testing.T) {
		stream := client.Messages.NewStreaming(context.Background(), messages("the weather in Oslo, streamed"))
		var msg sdk.Message
		for stream.Next() {
			if err := msg.Accumulate(stream.Current()); err != nil {
				t.Fatal(err)
			}
		}
		if err := stream.Err(); err != nil || len(msg.Content) != 1 {
			t.Fatalf("%v: %s", err, msg.RawJSON())
		}
		fits(t, msg.Content[0].Text)
	})

	t.Run("prose is a misfit", func(t *testing.T) {
		_, err := client.Messages.New(context.Background(), messages("ramble about the weather"))
		var apiErr *sdk.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadGateway || !strings.Contains(apiErr.Error(), "output_config.format") {
			t.Fatalf("a prose answer: %v", err)
		}
	})

	t.Run("chat", func(t *testing.T) {
		c, err := g.openai().Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
			Model:    "test-model",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("the weather in Oslo, as chat")},
			ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &openai.ResponseFormatJSONSchemaParam{
				JSONSchema: openai.ResponseFormatJSONSchemaJSONSchemaParam{Name: "weather", Schema: weatherSchema}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		fits(t, c.Choices[0].Message.Content)
	})

	t.Run("chat stream", func(t *testing.T) {
		stream := g.openai().Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
			Model:          "test-model",
			Messages:       []openai.ChatCompletionMessageParamUnion{openai.UserMessage("the weather in Oslo, as a chat stream")},
			ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONObject: &openai.ResponseFormatJSONObjectParam{}},
		})
		var acc openai.ChatCompletionAccumulator
		for stream.Next() {
			acc.AddChunk(stream.Current())
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		fits(t, acc.Choices[0].Message.Content)
	})

	t.Run("responses", func(t *testing.T) {
		r, err := g.openai().Responses.New(context.Background(), responses.ResponseNewParams{
			Model: "test-model",
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("the weather in Oslo, as a response")},
			Text: responses.ResponseTextConfigParam{Format: responses.ResponseFormatTextConfigUnionParam{
				OfJSONSchema: &responses.ResponseFormatTextJSONSchemaConfigParam{Name: "weather", Schema: weatherSchema}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		fits(t, r.OutputText())
	})

	t.Run("responses stream", func(t *testing.T) {
		stream := g.openai().Responses.NewStreaming(context.Background(), responses.ResponseNewParams{
			Model: "test-model",
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("the weather in Oslo, as a response stream")},
			Text: responses.ResponseTextConfigParam{Format: responses.ResponseFormatTextConfigUnionParam{
				OfJSONSchema: &responses.ResponseFormatTextJSONSchemaConfigParam{Name: "weather", Schema: weatherSchema}}},
		})
		var text string
		for stream.Next() {
			if ev := stream.Current(); ev.Type == "response.completed" {
				r := ev.AsResponseCompleted().Response
				text = r.OutputText()
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		fits(t, text)
	})

	t.Run("on a spare", func(t *testing.T) {
		// A host whose traffic so far had no schema: its spare, started
		// for that traffic, takes the schema when it is bound.
		g := newGateway(t)
		g.up.Respond(structuredUpstream)
		g.start()
		client := sdk.NewClient(option.WithBaseURL(g.url), option.WithAPIKey("any"), option.WithMaxRetries(0))
		plain := messages("hello")
		plain.OutputConfig = sdk.OutputConfigParam{}
		if _, err := client.Messages.New(context.Background(), plain); err != nil {
			t.Fatal(err)
		}
		if err := testkit.WaitFor(15*time.Second, func() error {
			if g.spares() == 0 {
				return errors.New("no spare yet")
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		waiting := g.claudes()
		msg, err := client.Messages.New(context.Background(), messages("the weather in Oslo, on a spare"))
		if err != nil {
			t.Fatal(err)
		}
		if text := msg.Content[0].Text; !strings.Contains(text, `"temp_c":12`) || !structuredAsked(g.up) {
			t.Fatalf("answer %q", text)
		}
		turns := regexp.MustCompile(`msg="turn done".* pid=(\d+)`).FindAllStringSubmatch(g.log.String(), -1)
		pid, _ := strconv.Atoi(turns[len(turns)-1][1])
		if !slices.Contains(waiting, pid) {
			t.Fatalf("the turn ran on process %d, not one of the spares waiting before it (%v)", pid, waiting)
		}
	})
}
