package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

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

// waitStatus polls a stored response until it has a final status.
func waitStatus(t *testing.T, c *openai.Client, id string) *responses.Response {
	t.Helper()
	var got *responses.Response
	waitFor(t, func() bool {
		var err error
		got, err = c.Responses.Get(context.Background(), id, responses.ResponseGetParams{})
		if err != nil {
			t.Fatal(err)
		}
		switch got.Status {
		case "completed", "incomplete", "failed", "cancelled":
			return true
		}
		return false
	})
	return got
}

// A background response answers at once, queued, runs on its own and is
// polled to completed.
func TestResponsesBackgroundPolled(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{sessions: true})
	c, p, gate := gatedBackground(s)
	got, err := c.Responses.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != "queued" || !got.Background {
		t.Fatalf("background answer = %s", got.RawJSON())
	}
	waitFor(t, func() bool { return len(s.Upstream.Requests()) == 1 })
	// Running (its CLI has asked the model) is in progress, here and in
	// the store any other meridian on the data dir reads.
	running, err := c.Responses.Get(context.Background(), got.ID, responses.ResponseGetParams{})
	if err != nil || running.Status != "in_progress" {
		t.Fatalf("while running: %v %s", err, running.RawJSON())
	}
	var stored string
	if err := storeDB(t, s).QueryRow(`SELECT status FROM responses WHERE id = ?`, got.ID).Scan(&stored); err != nil || stored != "in_progress" {
		t.Fatalf("the store says %q while it runs (%v)", stored, err)
	}
	close(gate)
	done := waitStatus(t, c, got.ID)
	if done.Status != "completed" || done.OutputText() != "Done in the background." {
		t.Fatalf("polled = %s", done.RawJSON())
	}
	wantResponseUsage(t, done.Usage)
}

// gatedBackground sets the upstream to answer once gate closes, and
// returns a client and the parameters of a background response.
func gatedBackground(s *stack) (*openai.Client, responses.ResponseNewParams, chan struct{}) {
	gate := make(chan struct{})
	s.Upstream.Always(testkit.Reply{Text: "Done in the background.", Usage: scriptedUsage, Gate: gate})
	p := respParams("work on it")
	p.Background = openai.Bool(true)
	return s.chatClient(), p, gate
}

// A background response's events replay from any sequence number and
// follow live: a client that dropped its stream resumes after the last
// event it saw and misses nothing.
func TestResponsesBackgroundResumesStartingAfter(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{sessions: true})
	s.Upstream.Always(testkit.Reply{Text: "one two three four five six", ChunkSize: 4, ChunkDelay: 150 * time.Millisecond})
	c := s.chatClient()
	p := respParams("count slowly")
	p.Background = openai.Bool(true)
	ctx, cancel := context.WithCancel(context.Background())
	st := c.Responses.NewStreaming(ctx, p)
	var seen []string
	var id string
	for st.Next() {
		ev := st.Current()
		seen = append(seen, ev.Type)
		if ev.Type == "response.created" {
			id = ev.Response.ID
		}
		if ev.Type == "response.output_text.delta" && len(seen) >= 6 {
			break // the client drops its stream mid-answer
		}
	}
	cancel()
	_ = st.Close()
	if id == "" || len(seen) < 6 {
		t.Fatalf("first stream: %v (%v)", seen, st.Err())
	}
	last := len(seen) - 1
	rest := c.Responses.GetStreaming(context.Background(), id, responses.ResponseGetParams{StartingAfter: openai.Int(int64(last))})
	var text strings.Builder
	next := last + 1
	var final responses.Response
	for rest.Next() {
		ev := rest.Current()
		if int(ev.SequenceNumber) != next {
			t.Fatalf("resumed at %d, want %d (%s)", ev.SequenceNumber, next, ev.Type)
		}
		next++
		if ev.Type == "response.output_text.delta" {
			text.WriteString(ev.Delta)
		}
		if ev.Type == "response.completed" {
			final = ev.Response
		}
	}
	if err := rest.Err(); err != nil {
		t.Fatal(err)
	}
	if final.OutputText() != "one two three four five six" || !strings.HasSuffix("one two three four five six", text.String()) || text.Len() == 0 {
		t.Fatalf("resumed text %q, final %s", text.String(), final.RawJSON())
	}
}

// Cancelling a background response mid-turn interrupts and joins its
// claude process and leaves it cancelled; another API key can neither
// read nor cancel it.
func TestResponsesBackgroundCancel(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{sessions: true})
	s.Upstream.Always(testkit.Reply{Text: "never finishes", Hang: true})
	c := s.chatClient()
	p := respParams("take forever")
	p.Background = openai.Bool(true)
	got, err := c.Responses.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return len(s.Upstream.Requests()) == 1 })

	other := s.chatClient(oaioption.WithAPIKey("another-key"))
	if _, err := other.Responses.Get(context.Background(), got.ID, responses.ResponseGetParams{}); chatAPIError(t, err).StatusCode != 404 {
		t.Fatalf("another key read the response: %v", err)
	}
	if _, err := other.Responses.Cancel(context.Background(), got.ID); chatAPIError(t, err).StatusCode != 404 {
		t.Fatalf("another key cancelled the response: %v", err)
	}
	if err := other.Responses.Delete(context.Background(), got.ID); chatAPIError(t, err).StatusCode != 404 {
		t.Fatalf("another key deleted the response: %v", err)
	}

	cancelled, err := c.Responses.Cancel(context.Background(), got.ID)
	if err != nil || cancelled.Status != "cancelled" {
		t.Fatalf("cancel: %v %s", err, cancelled.RawJSON())
	}
	testkit.WaitNoProcesses(t, s.Marker, 5*time.Second)
	if again, err := c.Responses.Get(context.Background(), got.ID, responses.ResponseGetParams{}); err != nil || again.Status != "cancelled" {
		t.Fatalf("after cancel: %v %s", err, again.RawJSON())
	}
}
