package e2e

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	oaioption "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/meridian-gw/meridian/internal/procgroup"
	"github.com/meridian-gw/meridian/internal/testkit"
)

// storyUpstream answers "tell me a long story" with a few words and then
// nothing more until the request is cancelled: a holder in the middle of
// its answer. Anything else is answered at once.
func storyUpstream(r testkit.Request) testkit.Reply {
	if strings.Contains(r.LastUserText(), "long story") {
		return testkit.Reply{Chunks: []string{"once ", "upon ", "a ", "time "}, StallAfter: 6}
	}
	return testkit.Reply{Text: "answer to " + r.LastUserText()}
}

// A stream relayed from the host that holds its conversation, whose
// holder is killed in the middle of it, ends in the client's own API's
// error — the Messages API's error event, Chat's error chunk, the
// Responses API's response.failed — never as a stream that merely stops
// and reads as a whole answer.
func TestARelayedStreamWhoseHolderDiesEndsInAnError(t *testing.T) {
	t.Parallel()
	up := testkit.NewUpstream(t)
	up.Respond(storyUpstream)
	dsn, hosts := routedHosts(t, up)
	a, b := hosts[0], hosts[1]
	// turn1 answers a conversation's first turn through a, which then
	// holds it; killed runs while its second turn's answer streams
	// through b.
	turn1 := func(t *testing.T, conv string) {
		t.Helper()
		if a.cmd.ProcessState != nil { // killed by the subtest before
			a.startOn("127.0.0.2", dsn, "--cluster-key", "test-cluster-key")
		}
		resp, body, err := a.post(prompt("hello"), "X-Claude-Code-Session-Id", conv)
		if err != nil || resp.StatusCode != http.StatusOK || resp.Header.Get("X-Meridian-Host") != hostID(t, a) {
			t.Fatalf("turn 1 through a: %v %v %s", err, resp, body)
		}
	}
	history := []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock("hello")),
		sdk.NewAssistantMessage(sdk.NewTextBlock("answer to hello")), sdk.NewUserMessage(sdk.NewTextBlock("tell me a long story"))}

	t.Run("messages", func(t *testing.T) {
		turn1(t, "cut-messages")
		stream := b.anthropic("cut-messages").Messages.NewStreaming(context.Background(),
			sdk.MessageNewParams{Model: "test-model", MaxTokens: 100, Messages: history})
		var text string
		for stream.Next() {
			if ev := stream.Current(); ev.Type == "content_block_delta" {
				text += ev.Delta.Text
				if strings.Contains(text, "time") && a.cmd.ProcessState == nil {
					a.kill9()
				}
			}
		}
		err := stream.Err()
		if err == nil || !strings.Contains(err.Error(), "stopped in the middle of its answer") || !strings.Contains(text, "once") {
			t.Fatalf("the relayed stream ended with %v after %q", err, text)
		}
		t.Logf("the client heard: %v", err)
	})

	t.Run("chat", func(t *testing.T) {
		turn1(t, "cut-chat")
		stream := b.openai().Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{Model: "test-model",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello"), openai.AssistantMessage("answer to hello"),
				openai.UserMessage("tell me a long story")}}, oaioption.WithHeader("X-Claude-Code-Session-Id", "cut-chat"))
		var text string
		for stream.Next() {
			if c := stream.Current(); len(c.Choices) > 0 {
				text += c.Choices[0].Delta.Content
				if strings.Contains(text, "time") && a.cmd.ProcessState == nil {
					a.kill9()
				}
			}
		}
		err := stream.Err()
		if err == nil || !strings.Contains(err.Error(), "stopped in the middle of its answer") || !strings.Contains(text, "once") {
			t.Fatalf("the relayed chat stream ended with %v after %q", err, text)
		}
	})

	t.Run("responses", func(t *testing.T) {
		turn1(t, "cut-responses")
		stream := b.openai().Responses.NewStreaming(context.Background(), responses.ResponseNewParams{Model: "test-model",
			Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
				responses.ResponseInputItemParamOfMessage("hello", responses.EasyInputMessageRoleUser),
				responses.ResponseInputItemParamOfMessage("answer to hello", responses.EasyInputMessageRoleAssistant),
				responses.ResponseInputItemParamOfMessage("tell me a long story", responses.EasyInputMessageRoleUser)}}},
			oaioption.WithHeader("X-Claude-Code-Session-Id", "cut-responses"))
		var text, id string
		var failed *responses.Response
		for stream.Next() {
			switch ev := stream.Current(); ev.Type {
			case "response.created":
				id = ev.Response.ID
			case "response.output_text.delta":
				text += ev.Delta
				if strings.Contains(text, "time") && a.cmd.ProcessState == nil {
					a.kill9()
				}
			case "response.failed":
				r := ev.AsResponseFailed().Response
				failed = &r
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if failed == nil || failed.ID != id || failed.Status != "failed" || !strings.Contains(failed.Error.Message, "stopped in the middle of its answer") {
			t.Fatalf("the relayed Responses stream ended with %+v after %q", failed, text)
		}
	})
}

// A holder paused in the middle of a relayed stream (SIGSTOP: a frozen
// VM) keeps its connection open and sends nothing: the relaying host
// pings the client while it waits, and once the holder's heartbeat has
// expired and it has been silent for longer than a ping interval, ends
// the stream with an error.
func TestARelayedStreamWhoseHolderPausesEndsInAnError(t *testing.T) {
	t.Parallel()
	up := testkit.NewUpstream(t)
	up.Respond(storyUpstream)
	const ping, expiry = time.Second, 3 * time.Second
	_, hosts := routedHosts(t, up, "--ping-interval", ping.String())
	a, b := hosts[0], hosts[1]
	if resp, body, err := a.post(prompt("hello"), "X-Claude-Code-Session-Id", "paused-stream"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("turn 1 through a: %v %s", err, body)
	}
	body := `{"model":"test-model","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"hello"},` +
		`{"role":"assistant","content":"answer to hello"},{"role":"user","content":"tell me a long story"}]}`
	req, _ := http.NewRequest(http.MethodPost, b.url+"/v1/messages", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Claude-Code-Session-Id", "paused-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if got := resp.Header.Get("X-Meridian-Host"); got != hostID(t, a) {
		t.Fatalf("turn 2 was answered by %q, not the holder", got)
	}
	t.Cleanup(func() { _ = procgroup.Signal(a.cmd.Process.Pid, procgroup.Thaw) })
	var stopped time.Time
	var pings int
	var last string
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() {
		line := lines.Text()
		switch {
		case strings.Contains(line, `"text":"time "`) && stopped.IsZero():
			if err := procgroup.Signal(a.cmd.Process.Pid, procgroup.Freeze); err != nil {
				t.Fatal(err)
			}
			stopped = time.Now()
		case line == "event: ping" && !stopped.IsZero():
			pings++
		case strings.HasPrefix(line, "event: "):
			last = line
		case strings.HasPrefix(line, "data: ") && last == "event: error":
			took := time.Since(stopped)
			if !strings.Contains(line, "stopped in the middle of its answer") || pings < 2 {
				t.Fatalf("after %d pings the stream ended with %s", pings, line)
			}
			// The bound: the heartbeat's expiry, then a ping interval of
			// silence, then the next look at the heartbeat (every second),
			// all from the holder's last beat or byte.
			if bound := expiry + ping + 2*time.Second; took > bound+5*time.Second {
				t.Fatalf("the error came %v after the holder stopped; the bound is %v", took, bound)
			}
			t.Logf("the client got %d pings, then the error %v after the holder stopped (host expiry %v, ping interval %v)",
				pings, took.Round(100*time.Millisecond), expiry, ping)
			return
		}
	}
	t.Fatalf("the stream ended without an error (err %v, %d pings after the stop at %v)", lines.Err(), pings, stopped)
}
