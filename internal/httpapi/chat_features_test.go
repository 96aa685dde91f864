package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/meridian-gw/meridian/internal/testkit"
)

func chatAPIError(t *testing.T, err error) *openai.Error {
	t.Helper()
	var ae *openai.Error
	if !errors.As(err, &ae) {
		t.Fatalf("error %v (%T) is not an API error", err, err)
	}
	return ae
}

// Tool outputs already delivered and answered: the identical request again
// gets the saved answer, another request with them is refused with 409;
// a batch missing an output gets a 400 naming the call. None reaches the
// upstream.
func TestChatToolResultGuards(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{sessions: true})
	s.Upstream.Respond(func(r testkit.Request) testkit.Reply {
		if toolResults(r) == 0 {
			return testkit.Reply{ToolUses: []testkit.ToolUse{
				{ID: "toolu_g1", Name: modelName("read_file"), Input: map[string]any{"path": "1"}},
				{ID: "toolu_g2", Name: modelName("read_file"), Input: map[string]any{"path": "2"}},
			}}
		}
		return testkit.Reply{Text: "both"}
	})
	l := &chatLoop{t: t, s: s, client: s.chatClient(), history: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("read 1 and 2")}}
	l.send()
	partial := append(append([]openai.ChatCompletionMessageParamUnion(nil), l.history...), openai.ToolMessage("one", "toolu_g1"))
	p := chatParams(partial...)
	p.Tools = chatTools()
	_, err := l.client.Chat.Completions.New(context.Background(), p)
	if ae := chatAPIError(t, err); ae.StatusCode != 400 || !strings.Contains(ae.Message, "toolu_g2") {
		t.Fatalf("partial outputs: %d %s", ae.StatusCode, ae.RawJSON())
	}
	l.history = append(l.history, openai.ToolMessage("one", "toolu_g1"), openai.ToolMessage("two", "toolu_g2"))
	withOutputs := append([]openai.ChatCompletionMessageParamUnion(nil), l.history...)
	if msg := l.send(); msg.Content != "both" {
		t.Fatalf("final %s", msg.RawJSON())
	}
	before := len(s.Upstream.Requests())
	p = chatParams(withOutputs...)
	p.Tools = chatTools()
	if again, err := l.client.Chat.Completions.New(context.Background(), p); err != nil || again.Choices[0].Message.Content != "both" {
		t.Fatalf("the identical repeat: %v %v", again, err)
	}
	p.MaxCompletionTokens = openai.Int(999)
	_, err = l.client.Chat.Completions.New(context.Background(), p)
	if ae := chatAPIError(t, err); ae.StatusCode != http.StatusConflict || ae.Code != "conflict" || !strings.Contains(ae.Message, "toolu_g1") {
		t.Fatalf("repeat: %d %s", ae.StatusCode, ae.RawJSON())
	}
	if after := len(s.Upstream.Requests()); after != before+0 {
		t.Fatalf("refused requests reached the upstream (%d requests, was %d)", after, before)
	}
}

// response_format goes to the CLI's structured output: the model gets the
// schema as the CLI's StructuredOutput tool, the value it gives is the
// answer, and a model that never gives one that fits is a 502 naming the
// field rather than unchecked text.
func TestChatResponseFormat(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	schema := shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "person", Schema: map[string]any{
		"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}, "age": map[string]any{"type": "integer"}},
		"required": []string{"name", "age"},
	}}
	p := chatParams(openai.UserMessage("a person"))
	p.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{JSONSchema: schema}}

	person := func(input map[string]any) testkit.Responder {
		return func(r testkit.Request) testkit.Reply {
			if strings.Contains(r.AllText(), "Structured output provided") {
				return testkit.Reply{}
			}
			return testkit.Reply{Text: "Here it is.", ToolUses: []testkit.ToolUse{{Name: "StructuredOutput", Input: input}}}
		}
	}
	s.Upstream.Respond(person(map[string]any{"name": "Ada", "age": 36}))
	got, err := s.chatClient().Chat.Completions.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if c := got.Choices[0].Message.Content; c != `{"age":36,"name":"Ada"}` {
		t.Fatalf("content = %q", c)
	}
	if tool, _ := json.Marshal(s.Upstream.Requests()[0].Body["tools"]); !strings.Contains(string(tool), `"StructuredOutput"`) || !strings.Contains(string(tool), `"required":["name","age"]`) {
		t.Fatalf("the schema did not reach the model as the CLI's tool: %s", tool)
	}

	acc, chunks, err := streamChat(t, s.chatClient(), p)
	if err != nil || acc.Choices[0].Message.Content != `{"age":36,"name":"Ada"}` {
		t.Fatalf("streamed: %v %+v", err, acc.Choices)
	}
	if len(chunks) != 3 {
		t.Fatalf("%d chunks: the checked answer goes out whole, after the role", len(chunks))
	}

	s.Upstream.Respond(person(map[string]any{"name": "Ada"}))
	_, err = s.chatClient().Chat.Completions.New(context.Background(), p)
	if ae := chatAPIError(t, err); ae.StatusCode != 502 || !strings.Contains(ae.Message, "response_format") || !strings.Contains(ae.Message, "age") {
		t.Fatalf("mismatch: %d %s", ae.StatusCode, ae.RawJSON())
	}
	_, _, err = streamChat(t, s.chatClient(), p)
	if err == nil || !strings.Contains(err.Error(), "response_format") {
		t.Fatalf("streamed mismatch: %v", err)
	}

	p.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}}
	_, err = s.chatClient().Chat.Completions.New(context.Background(), p)
	if err != nil {
		t.Fatalf("json_object: %v", err)
	}
}

// reasoning_effort turns thinking on at that effort; thinking reaches the
// client as reasoning_content, never inside content.
func TestChatReasoning(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	s.Upstream.Always(testkit.Reply{Thinking: "pondering", Text: "answer"})

	plain, err := s.chatClient().Chat.Completions.New(context.Background(), chatParams(openai.UserMessage("q")))
	if err != nil {
		t.Fatal(err)
	}
	if c := plain.Choices[0].Message; c.Content != "answer" || strings.Contains(c.RawJSON(), "pondering") {
		t.Fatalf("without reasoning_effort: %s", c.RawJSON())
	}
	if _, on := s.Upstream.Requests()[0].Body["thinking"]; on {
		t.Fatal("thinking was enabled upstream though the client did not ask")
	}

	p := chatParams(openai.UserMessage("q"))
	p.ReasoningEffort = shared.ReasoningEffortHigh
	got, err := s.chatClient().Chat.Completions.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if c := got.Choices[0].Message; c.Content != "answer" || !strings.Contains(c.RawJSON(), `"reasoning_content":"pondering"`) {
		t.Fatalf("with reasoning_effort: %s", c.RawJSON())
	}
	up := s.Upstream.Requests()[1].Body
	if th, _ := up["thinking"].(map[string]any); th["type"] != "adaptive" {
		t.Fatalf("upstream thinking = %v", up["thinking"])
	}
	if oc, _ := up["output_config"].(map[string]any); oc["effort"] != "high" {
		t.Fatalf("upstream output_config = %v", up["output_config"])
	}
	_, chunks, err := streamChat(t, s.chatClient(), p)
	if err != nil {
		t.Fatal(err)
	}
	var reasoning, content string
	for _, ch := range chunks {
		if len(ch.Choices) > 0 {
			content += ch.Choices[0].Delta.Content
			if r, ok := ch.Choices[0].Delta.JSON.ExtraFields["reasoning_content"]; ok {
				reasoning += strings.Trim(r.Raw(), `"`)
			}
		}
	}
	if reasoning != "pondering" || content != "answer" {
		t.Fatalf("streamed reasoning %q content %q", reasoning, content)
	}
}

// Images reach the model as image blocks: a data URL as base64, an https
// URL as a URL source the API fetches (the CLI passes it through; Meridian
// fetches nothing).
func TestChatImagesReachTheModel(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	s.Upstream.Always(testkit.Reply{Text: "a red square"})
	png := "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
	msg := openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
		openai.TextContentPart("What is this?"),
		openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: "data:image/png;base64," + png}),
		openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: "https://example.com/cat.png"}),
	})
	got, err := s.chatClient().Chat.Completions.New(context.Background(), chatParams(msg))
	if err != nil {
		t.Fatal(err)
	}
	if got.Choices[0].Message.Content != "a red square" {
		t.Fatalf("content = %q", got.Choices[0].Message.Content)
	}
	body := string(s.Upstream.Requests()[0].RawBody)
	if !strings.Contains(body, `"media_type":"image/png"`) || !strings.Contains(body, png) ||
		!strings.Contains(body, `"source":{"type":"url","url":"https://example.com/cat.png"}`) {
		t.Fatalf("the image did not reach the model:\n%s", s.Upstream.Requests()[0].PrettyBody())
	}
}

// A file a chat client attaches (file_data) reaches the model as a
// document block: a PDF as base64, with its name as the title.
func TestChatFileReachesTheModel(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	s.Upstream.Always(testkit.Reply{Text: "read it"})
	pdf := "JVBERi0xLjQgYSBzbWFsbCBkb2N1bWVudA=="
	p := chatParams(openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
		openai.TextContentPart("summarise"),
		openai.FileContentPart(openai.ChatCompletionContentPartFileFileParam{FileData: openai.String("data:application/pdf;base64," + pdf), Filename: openai.String("notes.pdf")}),
	}))
	if _, err := s.chatClient().Chat.Completions.New(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	body := string(s.Upstream.Requests()[0].RawBody)
	if !strings.Contains(body, `"type":"document"`) || !strings.Contains(body, pdf) || !strings.Contains(body, "notes.pdf") {
		t.Fatalf("the file did not reach the model as a document: %s", body)
	}
}
