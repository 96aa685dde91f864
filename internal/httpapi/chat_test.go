package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	oaioption "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/shared"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// chatClient is the official OpenAI SDK pointed at the stack, without SDK
// retries so that statuses reach the test as they are.
func (s *stack) chatClient(opts ...oaioption.RequestOption) *openai.Client {
	c := openai.NewClient(append([]oaioption.RequestOption{
		oaioption.WithBaseURL(s.URL + "/v1"),
		oaioption.WithAPIKey("client-key"),
		oaioption.WithMaxRetries(0),
		oaioption.WithHTTPClient(&http.Client{Timeout: 60 * time.Second}),
	}, opts...)...)
	return &c
}

func chatParams(msgs ...openai.ChatCompletionMessageParamUnion) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{Model: "test-model", Messages: msgs}
}

// streamChat runs a streamed completion through the SDK's accumulator.
func streamChat(t *testing.T, c *openai.Client, p openai.ChatCompletionNewParams, opts ...oaioption.RequestOption) (openai.ChatCompletion, []openai.ChatCompletionChunk, error) {
	t.Helper()
	st := c.Chat.Completions.NewStreaming(context.Background(), p, opts...)
	var acc openai.ChatCompletionAccumulator
	var chunks []openai.ChatCompletionChunk
	for st.Next() {
		chunk := st.Current()
		chunks = append(chunks, chunk)
		if !acc.AddChunk(chunk) {
			t.Fatalf("the accumulator refused chunk %d: %s", len(chunks), chunk.RawJSON())
		}
	}
	return acc.ChatCompletion, chunks, st.Err()
}

func wantChatUsage(t *testing.T, u openai.CompletionUsage) {
	t.Helper()
	// scriptedUsage: 11 input, 5 cache writes, 3 cache reads, 7 output.
	if u.PromptTokens != 19 || u.CompletionTokens != 7 || u.TotalTokens != 26 || u.PromptTokensDetails.CachedTokens != 3 {
		t.Fatalf("usage = %+v, want prompt 19 (3 cached), completion 7, total 26", u)
	}
}

// A plain completion and a streamed one return exactly the scripted text
// and usage, cached tokens included.
func TestChatPlainAndStreamed(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	s.Upstream.Always(testkit.Reply{Text: "The scripted answer.", ChunkSize: 4, Usage: scriptedUsage})
	c := s.chatClient()

	var resp *http.Response
	got, err := c.Chat.Completions.New(context.Background(), chatParams(openai.SystemMessage("Be brief."), openai.UserMessage("hello")),
		oaioption.WithResponseInto(&resp))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Choices) != 1 || got.Choices[0].Message.Content != "The scripted answer." || got.Choices[0].FinishReason != "stop" ||
		got.Model != "test-model" || got.Object != "chat.completion" || !strings.HasPrefix(got.ID, "chatcmpl-") || got.Created == 0 {
		t.Fatalf("completion = %s", got.RawJSON())
	}
	wantChatUsage(t, got.Usage)
	if resp.Header.Get("X-Meridian-Session-Id") == "" {
		t.Fatal("no X-Meridian-Session-Id on the answer")
	}
	if sys := s.Upstream.Requests()[0].SystemText(); !strings.Contains(sys, "Be brief.") {
		t.Fatalf("the system message did not become the system prompt: %q", sys)
	}

	p := chatParams(openai.UserMessage("hello"))
	p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	acc, chunks, err := streamChat(t, c, p)
	if err != nil {
		t.Fatal(err)
	}
	if acc.Choices[0].Message.Content != "The scripted answer." || acc.Choices[0].FinishReason != "stop" || acc.Model != "test-model" {
		t.Fatalf("streamed completion = %+v", acc.Choices)
	}
	wantChatUsage(t, acc.Usage)
	if first := chunks[0].Choices[0].Delta; first.Role != "assistant" {
		t.Fatalf("the first chunk does not name the role: %s", chunks[0].RawJSON())
	}
	if last := chunks[len(chunks)-1]; len(last.Choices) != 0 || last.Usage.TotalTokens == 0 {
		t.Fatalf("the last chunk is not the usage chunk: %s", last.RawJSON())
	}
	if deltas := len(chunks) - 3; deltas < 2 {
		t.Fatalf("the text arrived in %d deltas, want it streamed in pieces", deltas)
	}

	// Without include_usage there is no usage chunk.
	_, chunks, err = streamChat(t, c, chatParams(openai.UserMessage("hello")))
	if err != nil {
		t.Fatal(err)
	}
	for _, ch := range chunks {
		if len(ch.Choices) == 0 || ch.Usage.TotalTokens != 0 {
			t.Fatalf("usage was sent though not asked for: %s", ch.RawJSON())
		}
	}
}

// chatTools are two functions the client runs itself.
func chatTools() []openai.ChatCompletionToolUnionParam {
	return []openai.ChatCompletionToolUnionParam{
		openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "read_file", Description: openai.String("Read a file"),
			Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}, "required": []string{"path"}}}),
		openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "run_tests", Description: openai.String("Run the tests"),
			Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{"package": map[string]any{"type": "string"}}}}),
	}
}

// chatLoop is an OpenAI client running its own tools.
type chatLoop struct {
	t       *testing.T
	s       *stack
	client  *openai.Client
	stream  bool
	history []openai.ChatCompletionMessageParamUnion
	pids    [][]int
}

func (l *chatLoop) send() openai.ChatCompletionMessage {
	l.t.Helper()
	p := chatParams(l.history...)
	p.Tools = chatTools()
	var msg openai.ChatCompletionMessage
	var finish string
	if l.stream {
		acc, _, err := streamChat(l.t, l.client, p)
		if err != nil {
			l.t.Fatalf("turn %d: %v", len(l.history), err)
		}
		msg, finish = acc.Choices[0].Message, acc.Choices[0].FinishReason
	} else {
		got, err := l.client.Chat.Completions.New(context.Background(), p)
		if err != nil {
			l.t.Fatalf("turn %d: %v", len(l.history), err)
		}
		msg, finish = got.Choices[0].Message, got.Choices[0].FinishReason
	}
	if (len(msg.ToolCalls) > 0) != (finish == "tool_calls") {
		l.t.Fatalf("finish_reason %q with %d tool calls", finish, len(msg.ToolCalls))
	}
	l.history = append(l.history, msg.ToParam())
	l.pids = append(l.pids, testkit.Processes(l.s.Marker))
	return msg
}

// A three-step function-calling loop — text and a call, its result,
// another call, its result, the final text — runs on one claude process,
// and the upstream receives the client's real outputs under the right ids.
// Streamed and not.
func TestChatToolLoopOnOneProcess(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			t.Parallel()
			s := newStack(t, stackOptions{sessions: true})
			s.Upstream.Respond(threeSteps)
			l := &chatLoop{t: t, s: s, client: s.chatClient(), stream: stream,
				history: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("fix the build " + fmt.Sprint(stream))}}

			msg := l.send()
			if msg.Content != "Let me read it." || len(msg.ToolCalls) != 1 || msg.ToolCalls[0].ID != "toolu_1" ||
				msg.ToolCalls[0].Function.Name != "read_file" || msg.ToolCalls[0].Function.Arguments != `{"path":"main.go"}` {
				t.Fatalf("step 1: %s", msg.RawJSON())
			}
			l.history = append(l.history, openai.ToolMessage("package main // the real file", "toolu_1"))
			msg = l.send()
			if len(msg.ToolCalls) != 1 || msg.ToolCalls[0].Function.Name != "run_tests" || msg.Content != "" {
				t.Fatalf("step 2: %s", msg.RawJSON())
			}
			l.history = append(l.history, openai.ToolMessage("ok  ./... 1.2s", "toolu_2"))
			if msg = l.send(); msg.Content != "All tests pass." || len(msg.ToolCalls) != 0 {
				t.Fatalf("step 3: %s", msg.RawJSON())
			}
			wantThreeStepsOnOneProcess(t, s, l.pids)
		})
	}
}

// Three calls in one message, answered in reverse order: each output
// reaches the upstream under its own id.
func TestChatParallelBatchAnsweredInReverse(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{sessions: true})
	s.Upstream.Respond(batchOfThree)
	l := &chatLoop{t: t, s: s, client: s.chatClient(), stream: true,
		history: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("read three files")}}
	calls := l.send().ToolCalls
	if len(calls) != 3 {
		t.Fatalf("calls %+v", calls)
	}
	for i := len(calls) - 1; i >= 0; i-- {
		l.history = append(l.history, openai.ToolMessage("contents of "+calls[i].ID, calls[i].ID))
	}
	if msg := l.send(); msg.Content != "Read them all." {
		t.Fatalf("final %s", msg.RawJSON())
	}
	if l.pids[0][0] != l.pids[1][0] {
		t.Fatalf("the batch's results ran on %v, the calls on %v", l.pids[1], l.pids[0])
	}
	wantBatchResults(t, s.Upstream.Requests()[1])
}

// A two-turn chat conversation with a session header: turn 2 runs on the
// process of turn 1, under the same CLI session.
func TestChatTurnsContinueOnTheLiveProcess(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{sessions: true})
	answerLastQuestion(s.Upstream)
	c := s.chatClient(oaioption.WithHeader("X-Session-Affinity", "ses_chat"), oaioption.WithHeader("User-Agent", "opencode/1.18.33"))

	history := []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("You are a helper."), openai.UserMessage("question 1")}
	var pids []int
	var sessions []string
	for turn := 1; turn <= 2; turn++ {
		var resp *http.Response
		got, err := c.Chat.Completions.New(context.Background(), chatParams(history...), oaioption.WithResponseInto(&resp))
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("answer to question %d", turn); got.Choices[0].Message.Content != want {
			t.Fatalf("turn %d: %q, want %q", turn, got.Choices[0].Message.Content, want)
		}
		live := testkit.Processes(s.Marker)
		if len(live) != 1 {
			t.Fatalf("after turn %d: %d claude processes", turn, len(live))
		}
		pids, sessions = append(pids, live[0]), append(sessions, resp.Header.Get("X-Meridian-Session-Id"))
		history = append(history, got.Choices[0].Message.ToParam(), openai.UserMessage(fmt.Sprintf("question %d", turn+1)))
	}
	if pids[0] != pids[1] || sessions[0] != sessions[1] || sessions[0] == "" {
		t.Fatalf("turn 2 on pid %d session %q, turn 1 on pid %d session %q", pids[1], sessions[1], pids[0], sessions[0])
	}
	if got := testkit.TranscriptUserTexts(t, s.env, sessions[0]); strings.Join(got, "|") != "question 1|question 2" {
		t.Fatalf("the CLI was given %q, want only each new question", got)
	}
	if info := sessionInfo(t, s, "ses_chat"); info["client"] != "opencode" || verdicts(info) != "1/0/0/1" {
		t.Fatalf("session info %v", info)
	}
}

// stop ends the answer before the match, in both shapes.
func TestChatStopSequence(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	s.Upstream.Always(testkit.Reply{Text: "one two THREE four five", ChunkSize: 3})
	p := chatParams(openai.UserMessage("count"))
	p.Stop = openai.ChatCompletionNewParamsStopUnion{OfString: openai.String("THREE")}

	got, err := s.chatClient().Chat.Completions.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	acc, _, err := streamChat(t, s.chatClient(), p)
	if err != nil {
		t.Fatal(err)
	}
	for _, ch := range []openai.ChatCompletionChoice{got.Choices[0], acc.Choices[0]} {
		if ch.Message.Content != "one two " || ch.FinishReason != "stop" {
			t.Fatalf("choice = %q %q, want the text before the stop sequence", ch.Message.Content, ch.FinishReason)
		}
	}
	testkit.WaitNoProcesses(t, s.Marker, 3*time.Second)
}

// max_completion_tokens becomes the CLI's output limit, and an answer cut
// there finishes with "length".
func TestChatMaxCompletionTokens(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	s.Upstream.Always(testkit.Reply{Text: "truncated ans", StopReason: "max_tokens", Usage: testkit.Usage{InputTokens: 4, OutputTokens: 33}})
	p := chatParams(openai.UserMessage("write a lot"))
	p.MaxCompletionTokens = openai.Int(33)

	got, err := s.chatClient().Chat.Completions.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if ch := got.Choices[0]; ch.FinishReason != "length" || ch.Message.Content != "truncated ans" || got.Usage.CompletionTokens != 33 {
		t.Fatalf("completion = %s", got.RawJSON())
	}
	if mt := s.Upstream.Requests()[0].Body["max_tokens"]; mt != float64(33) {
		t.Fatalf("upstream max_tokens = %v, want 33", mt)
	}
	acc, _, err := streamChat(t, s.chatClient(), p)
	if err != nil || acc.Choices[0].FinishReason != "length" {
		t.Fatalf("streamed: %v %+v", err, acc.Choices)
	}
}

// An upstream 429 before the stream starts is a 429 with Retry-After in
// the OpenAI shape; one after the stream began ends it with an error
// chunk that carries the wait, before [DONE].
func TestChatRateLimit(t *testing.T) {
	t.Parallel()
	t.Run("before", func(t *testing.T) {
		t.Parallel()
		s := newStack(t, stackOptions{})
		s.Upstream.Always(testkit.Reply{Status: 429})
		for _, stream := range []bool{false, true} {
			var err error
			if stream {
				_, _, err = streamChat(t, s.chatClient(), chatParams(openai.UserMessage("hi")))
			} else {
				_, err = s.chatClient().Chat.Completions.New(context.Background(), chatParams(openai.UserMessage("hi")))
			}
			var ae *openai.Error
			if !errors.As(err, &ae) || ae.StatusCode != 429 || ae.Type != "rate_limit_error" || ae.Code != "rate_limit_exceeded" {
				t.Fatalf("stream=%v: %v", stream, err)
			}
			if ra := ae.Response.Header.Get("Retry-After"); ra != "60" {
				t.Fatalf("stream=%v: Retry-After = %q, want the 60 s default", stream, ra)
			}
		}
	})
	t.Run("after", func(t *testing.T) {
		t.Parallel()
		s := newStack(t, stackOptions{env: []string{"ANTHROPIC_API_KEY=", "CLAUDE_CODE_OAUTH_TOKEN=test-oauth-token"}})
		reset := time.Now().Add(90 * time.Minute)
		// The first call streams text and calls a tool the CLI does not
		// have; the CLI answers that itself, calls again and is refused.
		s.Upstream.Enqueue(testkit.Reply{Text: "Let me look.", ToolUses: []testkit.ToolUse{{Name: "read", Input: map[string]any{"path": "x"}}}})
		s.Upstream.Always(testkit.Reply{Status: 429, Headers: unifiedReset(reset, "rejected")})

		acc, chunks, err := streamChat(t, s.chatClient(), chatParams(openai.UserMessage("look it up")))
		var se *ssestream.StreamError
		if !errors.As(err, &se) {
			t.Fatalf("stream error = %v (%T), want an error chunk", err, err)
		}
		var frame struct {
			Error struct {
				Type       string `json:"type"`
				Code       string `json:"code"`
				RetryAfter int    `json:"retry_after"`
			} `json:"error"`
		}
		if err := json.Unmarshal(se.Event.Data, &frame); err != nil {
			t.Fatalf("error chunk %q: %v", se.Event.Data, err)
		}
		want := int(time.Until(reset).Seconds())
		if frame.Error.Type != "rate_limit_error" || frame.Error.Code != "rate_limit_exceeded" || frame.Error.RetryAfter < want-10 || frame.Error.RetryAfter > want+10 {
			t.Fatalf("error chunk = %s, want rate_limit_error with retry_after about %d", se.Event.Data, want)
		}
		if len(chunks) == 0 || acc.Choices[0].Message.Content != "Let me look." {
			t.Fatalf("before the error: %d chunks, content %+v", len(chunks), acc.Choices)
		}
		for _, ch := range chunks {
			if len(ch.Choices) > 0 && ch.Choices[0].FinishReason != "" {
				t.Fatalf("a finish_reason came before the error: %s", ch.RawJSON())
			}
		}
	})
}

// An answer names the model that ran, as the backend resolved it: asked
// for "default", the client learns which model that was.
func TestAnswersNameTheModelThatRan(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	s.Upstream.Always(testkit.Reply{Text: "ok"})
	got, err := s.chatClient().Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "default", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
	if err != nil {
		t.Fatal(err)
	}
	ran, _ := s.Upstream.Requests()[0].Body["model"].(string)
	if ran == "" || ran == "default" || got.Model != ran {
		t.Fatalf("the upstream ran %q, the chat answer names %q", ran, got.Model)
	}
	p := simpleParams("hi")
	p.Model = "default"
	msg, err := s.client().Messages.New(context.Background(), p)
	if err != nil || string(msg.Model) != ran {
		t.Fatalf("the Messages answer names %q (%v), the upstream ran %q", msg.Model, err, ran)
	}
}
