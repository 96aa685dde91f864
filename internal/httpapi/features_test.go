package httpapi_test

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// A fresh conversation with earlier turns reaches the model whole: text,
// images, tool calls and results, in order, in the first prompt.
func TestHistoryReachesTheModel(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	s.Upstream.Always(testkit.Reply{Text: "Continuing.", Usage: scriptedUsage})
	png := "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
	_, err := s.client().Messages.New(context.Background(), sdk.MessageNewParams{
		Model: "test-model", MaxTokens: 100,
		Messages: []sdk.MessageParam{
			sdk.NewUserMessage(sdk.NewTextBlock("What is in this picture?"), sdk.NewImageBlockBase64("image/png", png)),
			sdk.NewAssistantMessage(sdk.NewTextBlock("Let me check the file."), sdk.NewToolUseBlock("toolu_01", map[string]any{"path": "pic.png"}, "read_file")),
			sdk.NewUserMessage(sdk.NewToolResultBlock("toolu_01", "a red square", false)),
			sdk.NewAssistantMessage(sdk.NewTextBlock("It is a red square.")),
			userMessage("And what shape was it?"),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	reqs := s.Upstream.Requests()
	if len(reqs) != 1 {
		t.Fatalf("upstream saw %d requests", len(reqs))
	}
	all := reqs[0].AllText()
	var last int
	for _, want := range []string{
		"What is in this picture?", "Let me check the file.", `<tool_use id="toolu_01" name="read_file">{"path":"pic.png"}</tool_use>`,
		`<tool_result tool_use_id="toolu_01">`, "a red square", "It is a red square.", "And what shape was it?",
	} {
		i := strings.Index(all, want)
		if i < last {
			t.Fatalf("%q missing or out of order in what the model saw:\n%s", want, all)
		}
		last = i
	}
	if !strings.Contains(string(reqs[0].RawBody), png) {
		t.Fatal("the image did not reach the model")
	}
}

// The CLI may make several API calls in one turn; the client still gets
// one message with contiguous block indices (the SDK checks them).
func TestSeveralInternalCallsMakeOneMessage(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	s.Upstream.Enqueue(testkit.Reply{Text: "First part.", ToolUses: []testkit.ToolUse{{Name: "Bash", Input: map[string]any{"command": "ls"}}}, Usage: testkit.Usage{InputTokens: 3, OutputTokens: 2}})
	s.Upstream.Always(testkit.Reply{Text: "Second part.", Usage: testkit.Usage{InputTokens: 5, OutputTokens: 4}})

	stream := s.client().Messages.NewStreaming(context.Background(), simpleParams("go"))
	var msg sdk.Message
	starts := 0
	for stream.Next() {
		if stream.Current().Type == "message_start" {
			starts++
		}
		if err := msg.Accumulate(stream.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if starts != 1 || len(msg.Content) != 2 || msg.Content[0].Text != "First part." || msg.Content[1].Text != "Second part." {
		t.Fatalf("message_start x%d, content %+v", starts, msg.Content)
	}
	if msg.StopReason != sdk.StopReasonEndTurn || msg.Usage.InputTokens != 8 || msg.Usage.OutputTokens != 6 {
		t.Fatalf("stop %q usage %+v", msg.StopReason, msg.Usage)
	}
}

func TestStopSequenceEndsTheAnswer(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	s.Upstream.Always(testkit.Reply{Text: "one two THREE four five", ChunkSize: 3})

	for _, stream := range []bool{false, true} {
		params := simpleParams("count")
		params.StopSequences = []string{"THREE"}
		var msg sdk.Message
		if stream {
			st := s.client().Messages.NewStreaming(context.Background(), params)
			for st.Next() {
				if err := msg.Accumulate(st.Current()); err != nil {
					t.Fatal(err)
				}
			}
			if err := st.Err(); err != nil {
				t.Fatal(err)
			}
		} else {
			m, err := s.client().Messages.New(context.Background(), params)
			if err != nil {
				t.Fatal(err)
			}
			msg = *m
		}
		if len(msg.Content) != 1 || msg.Content[0].Text != "one two " || msg.StopReason != sdk.StopReasonStopSequence || msg.StopSequence != "THREE" {
			t.Fatalf("stream=%v: %+v stop %q seq %q", stream, msg.Content, msg.StopReason, msg.StopSequence)
		}
	}
	testkit.WaitNoProcesses(t, s.Marker, 3*time.Second)
}

// The upstream stops at the client's max_tokens; the CLI would ask it to
// go on, but the answer ends there, as the Messages API does.
func TestMaxTokensEndsTheAnswer(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	s.Upstream.Always(testkit.Reply{Text: "truncated ans", StopReason: "max_tokens", Usage: testkit.Usage{InputTokens: 4, OutputTokens: 33}})

	params := simpleParams("write a lot")
	params.MaxTokens = 33
	msg, err := s.client().Messages.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	if msg.StopReason != sdk.StopReasonMaxTokens || len(msg.Content) != 1 || msg.Content[0].Text != "truncated ans" || msg.Usage.OutputTokens != 33 {
		t.Fatalf("message = %+v", msg)
	}
	reqs := s.Upstream.Requests()
	if got := reqs[0].Body["max_tokens"]; got != float64(33) {
		t.Fatalf("upstream max_tokens = %v, want 33", got)
	}
}

func TestThinkingOnlyWhenAskedFor(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	s.Upstream.Always(testkit.Reply{Thinking: "pondering", Text: "answer"})

	plain, err := s.client().Messages.New(context.Background(), simpleParams("q"))
	if err != nil {
		t.Fatal(err)
	}
	if len(plain.Content) != 1 || plain.Content[0].Type != "text" {
		t.Fatalf("thinking leaked to a client that did not ask: %+v", plain.Content)
	}
	if _, on := s.Upstream.Requests()[0].Body["thinking"]; on {
		t.Fatal("thinking was enabled upstream though the client did not ask")
	}

	params := simpleParams("q")
	params.Thinking = sdk.ThinkingConfigParamOfEnabled(2048)
	withThinking, err := s.client().Messages.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	if len(withThinking.Content) != 2 || withThinking.Content[0].Thinking != "pondering" || withThinking.Content[0].Signature != "sig_fake" {
		t.Fatalf("content = %+v", withThinking.Content)
	}
}

// A message that looks like one of the CLI's own commands still reaches
// the model, unchanged.
func TestSlashCommandTextReachesTheModel(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	s.Upstream.Always(testkit.Reply{Text: "model answer"})
	msg, err := s.client().Messages.New(context.Background(), simpleParams("/compact"))
	if err != nil {
		t.Fatal(err)
	}
	if msg.Content[0].Text != "model answer" {
		t.Fatalf("the CLI answered instead of the model: %q", msg.Content[0].Text)
	}
	if got := s.Upstream.Requests()[0].LastUserText(); strings.ReplaceAll(got, "\n", "") != "/compact" {
		t.Fatalf("the model saw %q", got)
	}
}

// A broken upstream stream makes the CLI retry without streaming; the
// retried answer reaches the client instead of an empty response.
func TestBrokenUpstreamStreamRecovers(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	s.Upstream.Enqueue(testkit.Reply{Text: "Hello world, broken", ChunkSize: 3, BreakAfter: 4, ChunkDelay: 50 * time.Millisecond})
	s.Upstream.Always(testkit.Reply{Text: "Recovered answer", Usage: scriptedUsage})

	msg, err := s.client().Messages.New(context.Background(), simpleParams("q"))
	if err != nil {
		t.Fatal(err)
	}
	if len(msg.Content) != 1 || msg.Content[0].Text != "Recovered answer" {
		t.Fatalf("content = %+v (the abandoned partial block must be left out)", msg.Content)
	}
	if len(s.Upstream.Requests()) != 2 || s.Upstream.Requests()[1].Stream() {
		t.Fatal("expected the CLI's non-streaming retry")
	}
}

// A slow start commits the stream with a ping; the answer follows.
func TestPingsKeepASlowStreamAlive(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{pingInterval: 100 * time.Millisecond})
	s.Upstream.Always(testkit.Reply{Text: "eventually", Delay: 700 * time.Millisecond, Usage: scriptedUsage})

	body := `{"model":"test-model","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
	resp, err := http.Post(s.URL+"/v1/messages", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var events []string
	var start string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if ev, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
			events = append(events, ev)
		}
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok && strings.Contains(data, `"message_start"`) {
			start = data
		}
	}
	joined := strings.Join(events, " ")
	if !strings.HasPrefix(joined, "ping") || !strings.HasSuffix(joined, "message_delta message_stop") ||
		strings.Count(joined, "message_start") != 1 || !strings.Contains(joined, "content_block_delta") {
		t.Fatalf("events: %s", joined)
	}
	// The headers went out with the first ping, and still name the
	// session; message_start, after the pings, carries the input usage.
	if resp.Header.Get("X-Meridian-Session-Id") == "" {
		t.Fatal("a stream opened by a ping lost X-Meridian-Session-Id")
	}
	if !strings.Contains(start, `"input_tokens":11`) {
		t.Fatalf("message_start lost the input usage: %s", start)
	}
	// The official SDK reads such a stream whole.
	st := s.client().Messages.NewStreaming(context.Background(), simpleParams("hi"))
	var msg sdk.Message
	for st.Next() {
		if err := msg.Accumulate(st.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Err(); err != nil || len(msg.Content) != 1 || msg.Content[0].Text != "eventually" || msg.Usage.InputTokens != 11 {
		t.Fatalf("SDK: %v %+v", err, msg)
	}
}

func TestIgnoredParametersAreReported(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	body := `{"model":"test-model","max_tokens":10,"temperature":0.3,"top_k":4,"messages":[{"role":"user","content":"hi"}]}`
	resp, _ := do(t, http.MethodPost, s.URL+"/v1/messages", body, nil)
	if resp.StatusCode != 200 || resp.Header.Get("X-Meridian-Ignored-Params") != "temperature, top_k" {
		t.Fatalf("status %d, ignored = %q", resp.StatusCode, resp.Header.Get("X-Meridian-Ignored-Params"))
	}
	if resp.Header.Get("X-Meridian-Session-Id") == "" {
		t.Fatal("no session id header")
	}
}
