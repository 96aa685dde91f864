package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	oaioption "github.com/openai/openai-go/v3/option"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// A custom (freeform) tool through openai-go and the real claude: the
// model is offered it as a tool of one string property, "input"; its call
// reaches the client as a custom call carrying that text, streamed (its
// input whole, once the call is complete) and not; the client's output
// continues the turn, and its custom call, echoed in the history, is
// taken as the same call.
func TestChatCustomToolRoundTrip(t *testing.T) {
	t.Parallel()
	patch := "*** Begin Patch\n*** Add File: hello.txt\n+hi \"there\"\n*** End Patch"
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			t.Parallel()
			s := newStack(t, stackOptions{sessions: true})
			s.Upstream.Respond(func(r testkit.Request) testkit.Reply {
				if toolResults(r) == 0 {
					return testkit.Reply{Text: "Patching.", ToolUses: []testkit.ToolUse{{ID: "toolu_p", Name: modelName("apply_patch"), Input: map[string]any{"input": patch}}}}
				}
				return testkit.Reply{Text: "Patched."}
			})
			c := s.chatClient(oaioption.WithHeader("X-Claude-Code-Session-Id", fmt.Sprint("custom-", stream)))
			tools := []openai.ChatCompletionToolUnionParam{openai.ChatCompletionCustomTool(openai.ChatCompletionCustomToolCustomParam{
				Name: "apply_patch", Description: openai.String("Apply a patch to the project")})}
			history := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("add hello.txt")}
			ask := func() (openai.ChatCompletionMessage, []openai.ChatCompletionChunk) {
				t.Helper()
				p := chatParams(history...)
				p.Tools = tools
				if stream {
					acc, chunks, err := streamChat(t, c, p)
					if err != nil {
						t.Fatal(err)
					}
					return acc.Choices[0].Message, chunks
				}
				got, err := c.Chat.Completions.New(context.Background(), p)
				if err != nil {
					t.Fatal(err)
				}
				return got.Choices[0].Message, nil
			}
			msg, chunks := ask()
			var call struct {
				ID     string `json:"id"`
				Type   string `json:"type"`
				Custom struct {
					Name  string `json:"name"`
					Input string `json:"input"`
				} `json:"custom"`
			}
			if stream {
				// The SDK's chunk has no place for a custom call; its raw
				// JSON carries it: the head, then the input whole.
				var raw []string
				for _, ch := range chunks {
					if strings.Contains(ch.RawJSON(), `"custom"`) {
						raw = append(raw, ch.RawJSON())
					}
				}
				if len(raw) != 2 || !strings.Contains(raw[0], `"id":"toolu_p","type":"custom","custom":{"name":"apply_patch","input":""}`) {
					t.Fatalf("custom call chunks: %q", raw)
				}
				var ch struct {
					Choices []struct {
						Delta struct {
							ToolCalls []struct {
								Custom struct{ Input string } `json:"custom"`
							} `json:"tool_calls"`
						} `json:"delta"`
					} `json:"choices"`
				}
				_ = json.Unmarshal([]byte(raw[1]), &ch)
				call.ID, call.Type, call.Custom.Name, call.Custom.Input = "toolu_p", "custom", "apply_patch", ch.Choices[0].Delta.ToolCalls[0].Custom.Input
			} else if len(msg.ToolCalls) == 1 {
				_ = json.Unmarshal([]byte(msg.ToolCalls[0].RawJSON()), &call)
			}
			if call.ID != "toolu_p" || call.Type != "custom" || call.Custom.Name != "apply_patch" || call.Custom.Input != patch {
				t.Fatalf("the client got %+v (%s)", call, msg.RawJSON())
			}
			offered := s.Upstream.Requests()[0].Body["tools"].([]any)[0].(map[string]any)
			if schema, _ := json.Marshal(offered["input_schema"]); offered["name"] != modelName("apply_patch") || !strings.Contains(string(schema), `"input":{"description":"The tool's whole input, as free text.","type":"string"}`) {
				t.Fatalf("offered upstream: %v", offered)
			}
			// The client echoes its custom call and answers it.
			var assistant openai.ChatCompletionAssistantMessageParam
			assistant.Content.OfString = openai.String("Patching.")
			assistant.ToolCalls = []openai.ChatCompletionMessageToolCallUnionParam{{OfCustom: &openai.ChatCompletionMessageCustomToolCallParam{
				ID: call.ID, Custom: openai.ChatCompletionMessageCustomToolCallCustomParam{Name: call.Custom.Name, Input: call.Custom.Input}}}}
			history = append(history, openai.ChatCompletionMessageParamUnion{OfAssistant: &assistant}, openai.ToolMessage("Done!", call.ID))
			if msg, _ := ask(); msg.Content != "Patched." {
				t.Fatalf("final: %s", msg.RawJSON())
			}
			last := s.Upstream.Requests()[len(s.Upstream.Requests())-1]
			if body := string(last.RawBody); !strings.Contains(body, `"tool_use_id":"toolu_p"`) || !strings.Contains(body, "Done!") {
				t.Fatalf("the upstream lacks the client's output:\n%s", last.PrettyBody())
			}
			if n := len(s.Upstream.Requests()); n != 2 {
				t.Fatalf("%d upstream requests: the echoed call was not taken as the same one", n)
			}
		})
	}
}
