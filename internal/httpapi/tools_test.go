package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// The model calls client tools by their MCP names.
func modelName(tool string) string { return "mcp__c__" + tool }

func clientTools() []sdk.ToolUnionParam {
	return []sdk.ToolUnionParam{
		{OfTool: &sdk.ToolParam{Name: "read_file", Description: sdk.String("Read a file"), InputSchema: sdk.ToolInputSchemaParam{
			Properties: map[string]any{"path": map[string]any{"type": "string"}}, Required: []string{"path"}}}},
		{OfTool: &sdk.ToolParam{Name: "run_tests", Description: sdk.String("Run the tests"), InputSchema: sdk.ToolInputSchemaParam{
			Properties: map[string]any{"package": map[string]any{"type": "string"}}}}},
	}
}

// toolResults counts the tool_result blocks an upstream request carries.
func toolResults(r testkit.Request) int {
	return strings.Count(string(r.RawBody), `"type":"tool_result"`)
}

// toolLoop is a client running its own tools: it answers every tool_use
// with the result its function computes.
type toolLoop struct {
	t       *testing.T
	client  *sdk.Client
	history []sdk.MessageParam
	pids    [][]int
	s       *stack
}

func (l *toolLoop) send() *sdk.Message {
	l.t.Helper()
	msg, err := l.client.Messages.New(context.Background(), sdk.MessageNewParams{
		Model: "test-model", MaxTokens: 1000, Messages: l.history, Tools: clientTools(),
	})
	if err != nil {
		l.t.Fatalf("turn %d: %v", len(l.history), err)
	}
	l.history = append(l.history, msg.ToParam())
	l.pids = append(l.pids, testkit.Processes(l.s.Marker))
	return msg
}

func toolUses(msg *sdk.Message) []sdk.ToolUseBlock {
	var out []sdk.ToolUseBlock
	for _, b := range msg.Content {
		if b.Type == "tool_use" {
			out = append(out, b.AsToolUse())
		}
	}
	return out
}

// A three-step loop — text and a call, its result, another call, its
// result, the final text — runs on one claude process, and the upstream
// receives the client's real results.
func TestClientToolLoopOnOneProcess(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{sessions: true})
	s.Upstream.Respond(threeSteps)
	l := &toolLoop{t: t, s: s, client: s.client(option.WithHeader("X-Claude-Code-Session-Id", "tool-loop")),
		history: []sdk.MessageParam{userMessage("fix the build")}}

	msg := l.send()
	calls := toolUses(msg)
	if msg.StopReason != sdk.StopReasonToolUse || len(calls) != 1 || calls[0].Name != "read_file" || calls[0].ID != "toolu_1" ||
		msg.Content[0].Text != "Let me read it." {
		t.Fatalf("step 1: %+v", msg)
	}
	l.history = append(l.history, sdk.NewUserMessage(sdk.NewToolResultBlock("toolu_1", "package main // the real file", false)))
	msg = l.send()
	calls = toolUses(msg)
	if msg.StopReason != sdk.StopReasonToolUse || len(calls) != 1 || calls[0].Name != "run_tests" {
		t.Fatalf("step 2: %+v", msg)
	}
	l.history = append(l.history, sdk.NewUserMessage(sdk.NewToolResultBlock("toolu_2", "ok  ./... 1.2s", false)))
	msg = l.send()
	if msg.StopReason != sdk.StopReasonEndTurn || msg.Content[0].Text != "All tests pass." {
		t.Fatalf("step 3: %+v", msg)
	}
	wantThreeStepsOnOneProcess(t, s, l.pids)
	if tools := s.Upstream.Requests()[0].Body["tools"].([]any); len(tools) != 2 || tools[0].(map[string]any)["name"] != modelName("read_file") {
		t.Fatalf("tools offered upstream: %v", tools)
	}
}

// Three calls in one message, answered in reverse order: each result
// reaches the upstream under its own id.
func TestParallelBatchAnsweredInReverse(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{sessions: true})
	s.Upstream.Respond(batchOfThree)
	l := &toolLoop{t: t, s: s, client: s.client(option.WithHeader("X-Claude-Code-Session-Id", "batch")),
		history: []sdk.MessageParam{userMessage("read three files")}}
	calls := toolUses(l.send())
	if len(calls) != 3 {
		t.Fatalf("calls %+v", calls)
	}
	var results []sdk.ContentBlockParamUnion
	for i := len(calls) - 1; i >= 0; i-- {
		results = append(results, sdk.NewToolResultBlock(calls[i].ID, "contents of "+calls[i].ID, false))
	}
	l.history = append(l.history, sdk.NewUserMessage(results...))
	if msg := l.send(); msg.Content[0].Text != "Read them all." {
		t.Fatalf("final %+v", msg)
	}
	wantBatchResults(t, s.Upstream.Requests()[1])
}

// wantThreeStepsOnOneProcess checks a threeSteps loop ran on one claude
// process and the upstream received the client's real results under the
// calls' ids.
func wantThreeStepsOnOneProcess(t *testing.T, s *stack, pids [][]int) {
	t.Helper()
	for i, p := range pids {
		if len(p) != 1 || p[0] != pids[0][0] {
			t.Fatalf("step %d ran on %v, step 1 on %v: want one process throughout", i+1, p, pids[0])
		}
	}
	reqs := s.Upstream.Requests()
	if len(reqs) != 3 {
		t.Fatalf("upstream saw %d requests", len(reqs))
	}
	for i, want := range []string{"package main // the real file", "ok  ./... 1.2s"} {
		if body := string(reqs[i+1].RawBody); !strings.Contains(body, fmt.Sprintf(`"tool_use_id":"toolu_%d"`, i+1)) || !strings.Contains(body, want) {
			t.Fatalf("upstream request %d lacks the client's result %q:\n%s", i+2, want, reqs[i+1].PrettyBody())
		}
	}
}

// threeSteps scripts the upstream of a three-step loop: text and a
// read_file call, then a run_tests call, then the final text.
func threeSteps(r testkit.Request) testkit.Reply {
	switch toolResults(r) {
	case 0:
		return testkit.Reply{Text: "Let me read it.", ToolUses: []testkit.ToolUse{{ID: "toolu_1", Name: modelName("read_file"), Input: map[string]any{"path": "main.go"}}}}
	case 1:
		return testkit.Reply{ToolUses: []testkit.ToolUse{{ID: "toolu_2", Name: modelName("run_tests"), Input: map[string]any{"package": "./..."}}}}
	}
	return testkit.Reply{Text: "All tests pass."}
}

// batchOfThree scripts three read_file calls in one message, then the
// final text.
func batchOfThree(r testkit.Request) testkit.Reply {
	if toolResults(r) == 0 {
		var uses []testkit.ToolUse
		for _, f := range []string{"a.go", "b.go", "c.go"} {
			uses = append(uses, testkit.ToolUse{ID: "toolu_" + f[:1], Name: modelName("read_file"), Input: map[string]any{"path": f}})
		}
		return testkit.Reply{Text: "Reading three.", ToolUses: uses}
	}
	return testkit.Reply{Text: "Read them all."}
}

// wantBatchResults checks the upstream got each of the batch's results
// under its own id, in the calls' order.
func wantBatchResults(t *testing.T, last testkit.Request) {
	t.Helper()
	var pairs []string
	for _, m := range last.Messages() {
		blocks, _ := m.(map[string]any)["content"].([]any)
		for _, b := range blocks {
			if bm := b.(map[string]any); bm["type"] == "tool_result" {
				pairs = append(pairs, fmt.Sprintf("%v=%s", bm["tool_use_id"], testkitText(bm["content"])))
			}
		}
	}
	if got := strings.Join(pairs, " "); got != "toolu_a=contents of toolu_a toolu_b=contents of toolu_b toolu_c=contents of toolu_c" {
		t.Fatalf("upstream results: %s", got)
	}
}

func testkitText(v any) string {
	b, _ := json.Marshal(v)
	var blocks []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(b, &blocks) == nil && len(blocks) > 0 {
		return blocks[0].Text
	}
	var s string
	_ = json.Unmarshal(b, &s)
	return s
}

// Arguments that do not fit the tool's schema go back to the model as an
// error; the client never sees that call.
func TestInvalidArgumentsGoBackToTheModel(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{sessions: true})
	s.Upstream.Respond(func(r testkit.Request) testkit.Reply {
		switch {
		case toolResults(r) == 0:
			return testkit.Reply{Text: "Trying.", ToolUses: []testkit.ToolUse{{ID: "toolu_bad", Name: modelName("read_file"), Input: map[string]any{"path": 42}}}}
		case strings.Contains(string(r.RawBody), "toolu_bad") && !strings.Contains(string(r.RawBody), "toolu_good"):
			return testkit.Reply{ToolUses: []testkit.ToolUse{{ID: "toolu_good", Name: modelName("read_file"), Input: map[string]any{"path": "42.go"}}}}
		}
		return testkit.Reply{Text: "Done."}
	})
	l := &toolLoop{t: t, s: s, client: s.client(option.WithHeader("X-Claude-Code-Session-Id", "invalid")),
		history: []sdk.MessageParam{userMessage("read file 42")}}
	msg := l.send()
	calls := toolUses(msg)
	if len(calls) != 1 || calls[0].ID != "toolu_good" {
		t.Fatalf("the client saw %+v; want only the valid retry", msg.Content)
	}
	if strings.Contains(fmt.Sprint(msg.Content), "toolu_bad") {
		t.Fatal("the invalid call reached the client")
	}
	second := s.Upstream.Requests()[1]
	body := string(second.RawBody)
	if !strings.Contains(body, `"tool_use_id":"toolu_bad"`) || !strings.Contains(body, "got number, want string") || !strings.Contains(body, `"is_error":true`) {
		t.Fatalf("the model did not get the validation error:\n%s", second.PrettyBody())
	}
}

// A batch with one invalid call reaches the client not at all: the model
// gets every call of it back as an error naming the invalid one, and the
// batch it sends again, valid, reaches the client whole, answered in
// reverse.
func TestInvalidCallFailsItsWholeBatch(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{sessions: true})
	batch := func(prefix string, second any) testkit.Reply {
		var uses []testkit.ToolUse
		for i, path := range []any{"a.go", second, "c.go"} {
			uses = append(uses, testkit.ToolUse{ID: fmt.Sprintf("toolu_%s%d", prefix, i+1), Name: modelName("read_file"), Input: map[string]any{"path": path}})
		}
		return testkit.Reply{Text: "Reading three.", ToolUses: uses}
	}
	s.Upstream.Respond(func(r testkit.Request) testkit.Reply {
		switch toolResults(r) {
		case 0:
			return batch("bad", 42)
		case 3:
			return batch("ok", "b.go")
		}
		return testkit.Reply{Text: "Read them all."}
	})
	l := &toolLoop{t: t, s: s, client: s.client(option.WithHeader("X-Claude-Code-Session-Id", "invalid-batch")),
		history: []sdk.MessageParam{userMessage("read three files")}}
	msg := l.send()
	calls := toolUses(msg)
	if len(calls) != 3 || strings.Contains(string(msg.RawJSON()), "toolu_bad") {
		t.Fatalf("the client saw %s; want only the valid batch", msg.RawJSON())
	}
	retried := s.Upstream.Requests()[1]
	var refused []string
	for _, m := range retried.Messages() {
		blocks, _ := m.(map[string]any)["content"].([]any)
		for _, b := range blocks {
			if bm := b.(map[string]any); bm["type"] == "tool_result" && bm["is_error"] == true &&
				strings.Contains(testkitText(bm["content"]), "call 2 of 3 (read_file, id toolu_bad2)") {
				refused = append(refused, fmt.Sprint(bm["tool_use_id"]))
			}
		}
	}
	if strings.Join(refused, " ") != "toolu_bad1 toolu_bad2 toolu_bad3" {
		t.Fatalf("the model got %v refused; want all three, each naming the invalid call:\n%s", refused, retried.PrettyBody())
	}
	var results []sdk.ContentBlockParamUnion
	for i := len(calls) - 1; i >= 0; i-- {
		results = append(results, sdk.NewToolResultBlock(calls[i].ID, "contents of "+calls[i].ID, false))
	}
	l.history = append(l.history, sdk.NewUserMessage(results...))
	if msg := l.send(); msg.Content[0].Text != "Read them all." {
		t.Fatalf("final %s", msg.RawJSON())
	}
	last := string(s.Upstream.Requests()[len(s.Upstream.Requests())-1].RawBody)
	for _, id := range []string{"toolu_ok1", "toolu_ok2", "toolu_ok3"} {
		if !strings.Contains(last, "contents of "+id) {
			t.Fatalf("the upstream lacks the client's result for %s", id)
		}
	}
}

// A tool_result delivered twice: the identical request again can only be
// a retry, and gets the saved answer (same message id, marked replayed);
// any other request delivering it again is refused. Neither reaches the
// upstream.
func TestDuplicateToolResultIsReplayedOrRefused(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{sessions: true})
	s.Upstream.Respond(func(r testkit.Request) testkit.Reply {
		if toolResults(r) == 0 {
			return testkit.Reply{ToolUses: []testkit.ToolUse{{ID: "toolu_once", Name: modelName("read_file"), Input: map[string]any{"path": "x"}}}}
		}
		return testkit.Reply{Text: "got it"}
	})
	l := &toolLoop{t: t, s: s, client: s.client(option.WithHeader("X-Claude-Code-Session-Id", "dup")),
		history: []sdk.MessageParam{userMessage("read x")}}
	l.send()
	l.history = append(l.history, sdk.NewUserMessage(sdk.NewToolResultBlock("toolu_once", "x body", false)))
	withResult := append([]sdk.MessageParam(nil), l.history...)
	first := l.send()
	before := len(s.Upstream.Requests())
	var resp *http.Response
	again, err := l.client.Messages.New(context.Background(), sdk.MessageNewParams{Model: "test-model", MaxTokens: 1000, Messages: withResult, Tools: clientTools()},
		option.WithResponseInto(&resp))
	if err != nil || again.ID != first.ID || again.Content[0].Text != "got it" || resp.Header.Get("X-Meridian-Replayed") != "true" {
		t.Fatalf("the identical repeat: %+v %v (replayed %q), first %s", again, err, resp.Header.Get("X-Meridian-Replayed"), first.ID)
	}
	_, err = l.client.Messages.New(context.Background(), sdk.MessageNewParams{Model: "test-model", MaxTokens: 999, Messages: withResult, Tools: clientTools()})
	ae := apiError(t, err)
	if ae.StatusCode != http.StatusConflict || !strings.Contains(ae.RawJSON(), "toolu_once") {
		t.Fatalf("another request delivering it again: %d %s", ae.StatusCode, ae.RawJSON())
	}
	if after := len(s.Upstream.Requests()); after != before {
		t.Fatalf("the repeat reached the upstream (%d requests, was %d)", after, before)
	}
}

// The live process dies between the tool call and its result: the result
// still completes the turn, through a replay of the calls and results.
func TestToolResultAfterTheProcessDiedReplays(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{sessions: true})
	s.Upstream.Respond(func(r testkit.Request) testkit.Reply {
		if !strings.Contains(r.AllText(), "the file body") {
			return testkit.Reply{Text: "Reading.", ToolUses: []testkit.ToolUse{{ID: "toolu_k", Name: modelName("read_file"), Input: map[string]any{"path": "k.go"}}}}
		}
		return testkit.Reply{Text: "The file says hello."}
	})
	l := &toolLoop{t: t, s: s, client: s.client(option.WithHeader("X-Claude-Code-Session-Id", "killed")),
		history: []sdk.MessageParam{userMessage("what does k.go say?")}}
	l.send()
	for _, pid := range testkit.Processes(s.Marker) {
		testkit.Kill(pid)
	}
	testkit.WaitNoProcesses(t, s.Marker, 3*time.Second)
	l.history = append(l.history, sdk.NewUserMessage(sdk.NewToolResultBlock("toolu_k", "the file body", false)))
	msg := l.send()
	if msg.Content[0].Text != "The file says hello." {
		t.Fatalf("answer %+v", msg.Content)
	}
	all := s.Upstream.Requests()[1].AllText()
	if !strings.Contains(all, `<tool_use id="toolu_k" name="read_file">`) || !strings.Contains(all, `<tool_result tool_use_id="toolu_k">`) {
		t.Fatalf("the replay lacks the call or its result:\n%s", all)
	}
}

// Text before a tool call streams to the client before the call.
func TestTextStreamsBeforeTheToolCall(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{sessions: true})
	s.Upstream.Always(testkit.Reply{Text: "First I will look around the repository.", ChunkSize: 8, ChunkDelay: 30 * time.Millisecond,
		ToolUses: []testkit.ToolUse{{ID: "toolu_s", Name: modelName("read_file"), Input: map[string]any{"path": "go.mod"}}}})
	stream := s.client(option.WithHeader("X-Claude-Code-Session-Id", "stream-tools")).Messages.NewStreaming(context.Background(), sdk.MessageNewParams{
		Model: "test-model", MaxTokens: 100, Messages: []sdk.MessageParam{userMessage("look")}, Tools: clientTools(),
	})
	var order []string
	var msg sdk.Message
	for stream.Next() {
		ev := stream.Current()
		if err := msg.Accumulate(ev); err != nil {
			t.Fatal(err)
		}
		switch ev.Type {
		case "content_block_delta":
			order = append(order, ev.Delta.Type)
		case "content_block_start":
			order = append(order, "start:"+ev.ContentBlock.Type)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(order, " ")
	if !strings.HasPrefix(joined, "start:text text_delta text_delta") || !strings.Contains(joined, "start:tool_use input_json_delta") ||
		strings.Index(joined, "text_delta") > strings.Index(joined, "start:tool_use") {
		t.Fatalf("event order: %s", joined)
	}
	calls := toolUses(&msg)
	if len(calls) != 1 || calls[0].Name != "read_file" || string(calls[0].Input) != `{"path":"go.mod"}` || msg.StopReason != sdk.StopReasonToolUse {
		t.Fatalf("streamed call %+v, stop %q", calls, msg.StopReason)
	}
}

// A continuation without every result of the batch is refused, naming the
// missing ids; the paused turn still takes the full set afterwards.
// Results must answer exactly the calls of the paused batch: a missing one
// or one for a call never made is a 400 naming the ids, and the turn can
// still be continued correctly afterwards.
func TestMissingResultsAreNamed(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{sessions: true})
	s.Upstream.Respond(func(r testkit.Request) testkit.Reply {
		if toolResults(r) == 0 {
			return testkit.Reply{ToolUses: []testkit.ToolUse{
				{ID: "toolu_m1", Name: modelName("read_file"), Input: map[string]any{"path": "1"}},
				{ID: "toolu_m2", Name: modelName("read_file"), Input: map[string]any{"path": "2"}},
			}}
		}
		return testkit.Reply{Text: "both"}
	})
	l := &toolLoop{t: t, s: s, client: s.client(option.WithHeader("X-Claude-Code-Session-Id", "missing")),
		history: []sdk.MessageParam{userMessage("read 1 and 2")}}
	l.send()
	partial := append(append([]sdk.MessageParam(nil), l.history...), sdk.NewUserMessage(sdk.NewToolResultBlock("toolu_m1", "one", false)))
	_, err := l.client.Messages.New(context.Background(), sdk.MessageNewParams{Model: "test-model", MaxTokens: 1000, Messages: partial, Tools: clientTools()})
	if ae := apiError(t, err); ae.StatusCode != 400 || !strings.Contains(ae.RawJSON(), "toolu_m2") {
		t.Fatalf("partial results: %d %s", ae.StatusCode, ae.RawJSON())
	}
	// A result for a call the model never made is refused too, naming it.
	extra := append(append([]sdk.MessageParam(nil), l.history...), sdk.NewUserMessage(sdk.NewToolResultBlock("toolu_m1", "one", false),
		sdk.NewToolResultBlock("toolu_m2", "two", false), sdk.NewToolResultBlock("toolu_never", "?", false)))
	_, err = l.client.Messages.New(context.Background(), sdk.MessageNewParams{Model: "test-model", MaxTokens: 1000, Messages: extra, Tools: clientTools()})
	if ae := apiError(t, err); ae.StatusCode != 400 || !strings.Contains(ae.RawJSON(), "toolu_never") {
		t.Fatalf("a result for a call never made: %d %s", ae.StatusCode, ae.RawJSON())
	}
	l.history = append(l.history, sdk.NewUserMessage(sdk.NewToolResultBlock("toolu_m1", "one", false), sdk.NewToolResultBlock("toolu_m2", "two", false)))
	if msg := l.send(); msg.Content[0].Text != "both" {
		t.Fatalf("final %+v", msg.Content)
	}
}

// A client tool may run as long as a build: a call answered after more
// than 90 s still completes the turn on its process.
func TestLongToolCallCompletes(t *testing.T) {
	if testing.Short() {
		t.Skip("takes over 90 s; run without -short")
	}
	t.Parallel()
	s := newStack(t, stackOptions{sessions: true})
	s.Upstream.Respond(func(r testkit.Request) testkit.Reply {
		if toolResults(r) == 0 {
			return testkit.Reply{ToolUses: []testkit.ToolUse{{ID: "toolu_slow", Name: modelName("run_tests"), Input: map[string]any{}}}}
		}
		return testkit.Reply{Text: "The long build passed."}
	})
	l := &toolLoop{t: t, s: s, client: s.client(option.WithHeader("X-Claude-Code-Session-Id", "long")),
		history: []sdk.MessageParam{userMessage("run the slow build")}}
	l.send()
	time.Sleep(95 * time.Second)
	l.history = append(l.history, sdk.NewUserMessage(sdk.NewToolResultBlock("toolu_slow", "build ok after 95 s", false)))
	if msg := l.send(); msg.Content[0].Text != "The long build passed." {
		t.Fatalf("answer %+v", msg.Content)
	}
	if p := l.pids; len(p[1]) != 1 || p[1][0] != p[0][0] {
		t.Fatalf("the call did not complete on its process: %v", p)
	}
	if body := string(s.Upstream.Requests()[1].RawBody); !strings.Contains(body, "build ok after 95 s") {
		t.Fatal("the result did not reach the upstream")
	}
}

// Each response of a tool loop reports the usage of its own upstream
// calls: the CLI counts a paused and continued turn as one, but the calls
// before the pause were already reported with the tool calls.
func TestContinuedTurnReportsOnlyItsOwnUsage(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{sessions: true})
	perCall := testkit.Usage{InputTokens: 10, OutputTokens: 2, CacheReadInputTokens: 5}
	s.Upstream.Respond(func(r testkit.Request) testkit.Reply {
		reply := threeSteps(r)
		reply.Usage = perCall
		return reply
	})
	l := &toolLoop{t: t, s: s, client: s.client(option.WithHeader("X-Claude-Code-Session-Id", "usage")),
		history: []sdk.MessageParam{userMessage("fix the build")}}
	for step, result := range []string{"package main", "ok", ""} {
		msg := l.send()
		if u := msg.Usage; u.InputTokens != 10 || u.OutputTokens != 2 || u.CacheReadInputTokens != 5 {
			t.Fatalf("step %d reports %+v, want one call's usage", step+1, u)
		}
		if calls := toolUses(msg); len(calls) == 1 {
			l.history = append(l.history, sdk.NewUserMessage(sdk.NewToolResultBlock(calls[0].ID, result, false)))
		}
	}
}

// A delivered tool result is a repeat only within its conversation:
// another conversation may get a call with the same id (the Messages API
// documentation's own example id) and deliver its result.
func TestToolIDsBelongToTheirConversation(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{sessions: true})
	s.Upstream.Respond(func(r testkit.Request) testkit.Reply {
		if toolResults(r) == 0 {
			return testkit.Reply{ToolUses: []testkit.ToolUse{{ID: "toolu_01A09q90qw90lq917835lq9", Name: modelName("read_file"), Input: map[string]any{"path": "x"}}}}
		}
		return testkit.Reply{Text: "read it"}
	})
	for _, conv := range []string{"conv-a", "conv-b"} {
		l := &toolLoop{t: t, s: s, client: s.client(option.WithHeader("X-Claude-Code-Session-Id", conv)),
			history: []sdk.MessageParam{userMessage("read x in " + conv)}}
		l.send()
		l.history = append(l.history, sdk.NewUserMessage(sdk.NewToolResultBlock("toolu_01A09q90qw90lq917835lq9", "x body", false)))
		if msg := l.send(); msg.Content[0].Text != "read it" {
			t.Fatalf("%s: %+v", conv, msg.Content)
		}
	}
}

// A tool the client adds on turn 2 reaches the model on turn 2 and the
// model can call it, on the same live process: the CLI is told its tool
// list changed and re-reads it. A changed tool_choice keeps the process
// too. A removed tool would stay offered by that process, so the turn
// that drops one resumes the stored session in a new process.
func TestAddedToolReachesTheModel(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{sessions: true})
	s.Upstream.Respond(func(r testkit.Request) testkit.Reply {
		tools, _ := r.Body["tools"].([]any)
		for _, tool := range tools {
			if tool.(map[string]any)["name"] == modelName("run_tests") && toolResults(r) == 0 {
				return testkit.Reply{ToolUses: []testkit.ToolUse{{ID: "toolu_new", Name: modelName("run_tests"), Input: map[string]any{"package": "./..."}}}}
			}
		}
		return testkit.Reply{Text: fmt.Sprintf("%d tools", len(tools))}
	})
	client := s.client(option.WithHeader("X-Claude-Code-Session-Id", "tools-change"))
	readOnly := clientTools()[:1]
	history := []sdk.MessageParam{userMessage("look around")}
	send := func(tools []sdk.ToolUnionParam, choice sdk.ToolChoiceUnionParam) (*sdk.Message, int) {
		t.Helper()
		msg, err := client.Messages.New(context.Background(), sdk.MessageNewParams{Model: "test-model", MaxTokens: 100, Messages: history, Tools: tools, ToolChoice: choice})
		if err != nil {
			t.Fatal(err)
		}
		history = append(history, msg.ToParam())
		pids := testkit.Processes(s.Marker)
		if len(pids) != 1 {
			t.Fatalf("%d claude processes", len(pids))
		}
		return msg, pids[0]
	}
	msg, pid1 := send(readOnly, sdk.ToolChoiceUnionParam{})
	if msg.Content[0].Text != "1 tools" {
		t.Fatalf("turn 1: %+v", msg.Content)
	}
	history = append(history, userMessage("again, any tool"))
	msg, pid2 := send(readOnly, sdk.ToolChoiceUnionParam{OfAny: &sdk.ToolChoiceAnyParam{}})
	if pid2 != pid1 || msg.Content[0].Text != "1 tools" {
		t.Fatalf("a changed tool_choice cost the live process (%d, was %d): %+v", pid2, pid1, msg.Content)
	}
	history = append(history, userMessage("now run the tests"))
	msg, pid3 := send(clientTools(), sdk.ToolChoiceUnionParam{})
	if calls := toolUses(msg); len(calls) != 1 || calls[0].Name != "run_tests" {
		t.Fatalf("the added tool was not offered on the turn it was added: %+v", msg.Content)
	}
	if pid3 != pid1 {
		t.Fatalf("the added tool cost the live process (%d, was %d)", pid3, pid1)
	}
	history = append(history, sdk.NewUserMessage(sdk.NewToolResultBlock("toolu_new", "all passed", false)))
	if msg, pid := send(clientTools(), sdk.ToolChoiceUnionParam{}); pid != pid1 || msg.Content[0].Text != fmt.Sprintf("%d tools", len(clientTools())) {
		t.Fatalf("the call of the added tool did not finish on its process (%d, was %d): %+v", pid, pid1, msg.Content)
	}

	history = append(history, userMessage("only look now"))
	msg, pid5 := send(readOnly, sdk.ToolChoiceUnionParam{})
	if pid5 == pid1 || msg.Content[0].Text != "1 tools" {
		t.Fatalf("a removed tool stayed offered (process %d, was %d): %+v", pid5, pid1, msg.Content)
	}
	reqs := s.Upstream.Requests()
	all := reqs[len(reqs)-1].AllText()
	if !strings.Contains(all, "look around") || !strings.Contains(all, "all passed") {
		t.Fatalf("the resumed session lost the history:\n%s", all)
	}
}
