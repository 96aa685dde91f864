package httpapi_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// A custom (freeform) tool on Responses through openai-go and the real
// claude: its call comes back as a custom_tool_call item carrying its
// text input (streamed as custom_tool_call_input events), and its
// custom_tool_call_output continues the turn — from a stateless client's
// whole history, and after previous_response_id.
func TestResponsesCustomToolRoundTrip(t *testing.T) {
	t.Parallel()
	patch := "*** Begin Patch\n*** Add File: hello.txt\n+hi\n*** End Patch"
	for _, mode := range []string{"stateless", "streamed", "stored"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			s := newStack(t, stackOptions{sessions: true})
			s.Upstream.Respond(func(r testkit.Request) testkit.Reply {
				if toolResults(r) == 0 {
					return testkit.Reply{Text: "Patching.", ToolUses: []testkit.ToolUse{{ID: "toolu_p", Name: modelName("apply_patch"), Input: map[string]any{"input": patch}}}}
				}
				return testkit.Reply{Text: "Patched."}
			})
			c := s.chatClient()
			tools := []responses.ToolUnionParam{{OfCustom: &responses.CustomToolParam{Name: "apply_patch", Description: openai.String("Apply a patch")}}}
			history := []responses.ResponseInputItemUnionParam{responses.ResponseInputItemParamOfMessage("add hello.txt "+mode, responses.EasyInputMessageRoleUser)}
			send := func(p responses.ResponseNewParams) (*responses.Response, []string) {
				t.Helper()
				p.Tools = tools
				if mode != "stored" {
					p.Store = openai.Bool(false)
				}
				if mode == "streamed" {
					final, types, err := streamResponse(t, c, p)
					if err != nil {
						t.Fatal(err)
					}
					return &final, types
				}
				got, err := c.Responses.New(context.Background(), p)
				if err != nil {
					t.Fatal(err)
				}
				return got, nil
			}
			r, types := send(itemsParams(history...))
			var call responses.ResponseCustomToolCall
			for _, it := range r.Output {
				switch it.Type {
				case "custom_tool_call":
					_ = json.Unmarshal([]byte(it.RawJSON()), &call)
				case "message":
					m := it.AsMessage().ToParam()
					history = append(history, responses.ResponseInputItemUnionParam{OfOutputMessage: &m})
				}
			}
			if call.CallID != "toolu_p" || call.Name != "apply_patch" || call.Input != patch {
				t.Fatalf("output: %s", r.RawJSON())
			}
			if mode == "streamed" && (!slices.Contains(types, "response.custom_tool_call_input.delta") || !slices.Contains(types, "response.custom_tool_call_input.done")) {
				t.Fatalf("stream events: %v", types)
			}
			output := responses.ResponseInputItemParamOfCustomToolCallOutput(call.CallID, "Done!")
			var p responses.ResponseNewParams
			if mode == "stored" {
				p = itemsParams(output)
				p.PreviousResponseID = openai.String(r.ID)
			} else {
				history = append(history, responses.ResponseInputItemParamOfCustomToolCall(call.CallID, call.Input, call.Name), output)
				p = itemsParams(history...)
			}
			if r, _ = send(p); r.OutputText() != "Patched." {
				t.Fatalf("final: %s", r.RawJSON())
			}
			last := s.Upstream.Requests()[len(s.Upstream.Requests())-1]
			if body := string(last.RawBody); !strings.Contains(body, `"tool_use_id":"toolu_p"`) || !strings.Contains(body, "Done!") || len(s.Upstream.Requests()) != 2 {
				t.Fatalf("%d upstream requests; the last:\n%s", len(s.Upstream.Requests()), last.PrettyBody())
			}
		})
	}
}
