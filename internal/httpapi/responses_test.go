package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	oaioption "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/meridian-gw/meridian/internal/testkit"
)

func respParams(input string) responses.ResponseNewParams {
	return responses.ResponseNewParams{Model: "test-model", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(input)}}
}

func itemsParams(items ...responses.ResponseInputItemUnionParam) responses.ResponseNewParams {
	return responses.ResponseNewParams{Model: "test-model", Input: responses.ResponseNewParamsInputUnion{OfInputItemList: items}}
}

// streamResponse runs a streamed response and returns its terminal
// response and the event types in order, checking sequence numbers.
func streamResponse(t *testing.T, c *openai.Client, p responses.ResponseNewParams, opts ...oaioption.RequestOption) (responses.Response, []string, error) {
	t.Helper()
	st := c.Responses.NewStreaming(context.Background(), p, opts...)
	var final responses.Response
	var types []string
	for st.Next() {
		ev := st.Current()
		if int(ev.SequenceNumber) != len(types) {
			t.Fatalf("event %d (%s) has sequence_number %d", len(types), ev.Type, ev.SequenceNumber)
		}
		types = append(types, ev.Type)
		switch ev.Type {
		case "response.completed", "response.incomplete", "response.failed":
			final = ev.Response
		}
	}
	return final, types, st.Err()
}

func wantResponseUsage(t *testing.T, u responses.ResponseUsage) {
	t.Helper()
	// scriptedUsage: 11 input, 5 cache writes, 3 cache reads, 7 output.
	if u.InputTokens != 19 || u.InputTokensDetails.CachedTokens != 3 || u.OutputTokens != 7 || u.TotalTokens != 26 {
		t.Fatalf("usage = %+v, want input 19 (3 cached), output 7, total 26", u)
	}
}

// A plain response and a streamed one return exactly the scripted text
// and usage, cached tokens included, with the full event sequence.
func TestResponsesPlainAndStreamed(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{sessions: true})
	s.Upstream.Always(testkit.Reply{Text: "The scripted answer.", ChunkSize: 4, Usage: scriptedUsage})
	c := s.chatClient()

	p := respParams("hello")
	p.Instructions = openai.String("Be brief.")
	var resp *http.Response
	got, err := c.Responses.New(context.Background(), p, oaioption.WithResponseInto(&resp))
	if err != nil {
		t.Fatal(err)
	}
	if got.OutputText() != "The scripted answer." || got.Status != "completed" || got.Model != "test-model" ||
		!strings.HasPrefix(got.ID, "resp_") || len(got.Output) != 1 || got.Output[0].Type != "message" {
		t.Fatalf("response = %s", got.RawJSON())
	}
	wantResponseUsage(t, got.Usage)
	if resp.Header.Get("X-Meridian-Session-Id") == "" {
		t.Fatal("no X-Meridian-Session-Id on the answer")
	}
	if sys := s.Upstream.Requests()[0].SystemText(); !strings.Contains(sys, "Be brief.") {
		t.Fatalf("instructions did not become the system prompt: %q", sys)
	}

	final, types, err := streamResponse(t, c, respParams("hello"))
	if err != nil {
		t.Fatal(err)
	}
	if final.OutputText() != "The scripted answer." || final.Status != "completed" {
		t.Fatalf("streamed response = %s", final.RawJSON())
	}
	wantResponseUsage(t, final.Usage)
	want := "response.created response.in_progress response.output_item.added response.content_part.added " +
		strings.Repeat("response.output_text.delta ", 5) +
		"response.output_text.done response.content_part.done response.output_item.done response.completed"
	if got := strings.Join(types, " "); got != want {
		t.Fatalf("events:\n got %s\nwant %s", got, want)
	}
}

// echo turns a response's output into input items, as a stateless client
// sends them back.
func echo(t *testing.T, r *responses.Response) []responses.ResponseInputItemUnionParam {
	t.Helper()
	var out []responses.ResponseInputItemUnionParam
	for _, it := range r.Output {
		switch it.Type {
		case "message":
			m := it.AsMessage().ToParam()
			out = append(out, responses.ResponseInputItemUnionParam{OfOutputMessage: &m})
		case "function_call":
			f := it.AsFunctionCall().ToParam()
			out = append(out, responses.ResponseInputItemUnionParam{OfFunctionCall: &f})
		case "reasoning":
			rs := it.AsReasoning().ToParam()
			out = append(out, responses.ResponseInputItemUnionParam{OfReasoning: &rs})
		default:
			t.Fatalf("unexpected output item %s", it.RawJSON())
		}
	}
	return out
}

func responseTools() []responses.ToolUnionParam {
	return []responses.ToolUnionParam{
		{OfFunction: &responses.FunctionToolParam{Name: "read_file", Description: openai.String("Read a file"),
			Parameters: map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}, "required": []string{"path"}}}},
		{OfFunction: &responses.FunctionToolParam{Name: "run_tests", Description: openai.String("Run the tests"),
			Parameters: map[string]any{"type": "object", "properties": map[string]any{"package": map[string]any{"type": "string"}}}}},
	}
}

func calls(r *responses.Response) []responses.ResponseFunctionToolCall {
	var out []responses.ResponseFunctionToolCall
	for _, it := range r.Output {
		if it.Type == "function_call" {
			out = append(out, it.AsFunctionCall())
		}
	}
	return out
}

// A three-step function-call loop of a stateless client (store: false,
// everything resent) runs on one claude process, and the upstream
// receives the client's outputs under the calls' ids.
func TestResponsesToolLoopOnOneProcess(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			t.Parallel()
			s := newStack(t, stackOptions{sessions: true})
			s.Upstream.Respond(threeSteps)
			c := s.chatClient()
			history := []responses.ResponseInputItemUnionParam{responses.ResponseInputItemParamOfMessage("fix the build "+fmt.Sprint(stream), responses.EasyInputMessageRoleUser)}
			var pids [][]int
			send := func() *responses.Response {
				t.Helper()
				p := itemsParams(history...)
				p.Tools, p.Store = responseTools(), openai.Bool(false)
				var got *responses.Response
				if stream {
					final, _, err := streamResponse(t, c, p)
					if err != nil {
						t.Fatal(err)
					}
					got = &final
				} else {
					var err error
					if got, err = c.Responses.New(context.Background(), p); err != nil {
						t.Fatal(err)
					}
				}
				history = append(history, echo(t, got)...)
				pids = append(pids, testkit.Processes(s.Marker))
				return got
			}
			r := send()
			cs := calls(r)
			if r.OutputText() != "Let me read it." || len(cs) != 1 || cs[0].CallID != "toolu_1" || cs[0].Name != "read_file" || cs[0].Arguments != `{"path":"main.go"}` {
				t.Fatalf("step 1: %s", r.RawJSON())
			}
			history = append(history, responses.ResponseInputItemParamOfFunctionCallOutput("package main // the real file"))
			history[len(history)-1].OfFunctionCallOutput.CallID = openai.String("toolu_1")
			r = send()
			if cs = calls(r); len(cs) != 1 || cs[0].Name != "run_tests" {
				t.Fatalf("step 2: %s", r.RawJSON())
			}
			history = append(history, responses.ResponseInputItemParamOfFunctionCallOutput("ok  ./... 1.2s"))
			history[len(history)-1].OfFunctionCallOutput.CallID = openai.String("toolu_2")
			if r = send(); r.OutputText() != "All tests pass." || len(calls(r)) != 0 {
				t.Fatalf("step 3: %s", r.RawJSON())
			}
			wantThreeStepsOnOneProcess(t, s, pids)
		})
	}
}

// previous_response_id continues a stored response on the live process:
// the client sends only what is new.
func TestResponsesPreviousResponseContinues(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{sessions: true})
	answerLastQuestion(s.Upstream)
	c := s.chatClient()
	var prev string
	var pids []int
	var sessions []string
	for turn := 1; turn <= 3; turn++ {
		p := respParams(fmt.Sprintf("question %d", turn))
		if prev != "" {
			p.PreviousResponseID = openai.String(prev)
		}
		var resp *http.Response
		got, err := c.Responses.New(context.Background(), p, oaioption.WithResponseInto(&resp))
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("answer to question %d", turn); got.OutputText() != want || (turn > 1 && got.PreviousResponseID != prev) {
			t.Fatalf("turn %d: %s", turn, got.RawJSON())
		}
		prev = got.ID
		live := testkit.Processes(s.Marker)
		if len(live) != 1 {
			t.Fatalf("after turn %d: %d claude processes", turn, len(live))
		}
		pids, sessions = append(pids, live[0]), append(sessions, resp.Header.Get("X-Meridian-Session-Id"))
	}
	if pids[0] != pids[2] || sessions[0] != sessions[2] {
		t.Fatalf("turns ran on pids %v, sessions %v: want one live process", pids, sessions)
	}
	if got := testkit.TranscriptUserTexts(t, s.env, sessions[0]); strings.Join(got, "|") != "question 1|question 2|question 3" {
		t.Fatalf("the CLI was given %q, want only each new question", got)
	}
	all := s.Upstream.Requests()[2].AllText()
	if !strings.Contains(all, "question 1") || !strings.Contains(all, "answer to question 2") {
		t.Fatalf("the model did not see the history:\n%s", all)
	}
}
