package httpapi_test

import (
	"context"
	"strings"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// Steering: text beside the results reaches the model as a new
// instruction, not inside a tool result, on the same process.
func TestSteeringBesideToolResults(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{sessions: true})
	s.Upstream.Respond(func(r testkit.Request) testkit.Reply {
		if toolResults(r) == 0 {
			return testkit.Reply{ToolUses: []testkit.ToolUse{{ID: "toolu_st", Name: modelName("run_tests"), Input: map[string]any{}}}}
		}
		return testkit.Reply{Text: "Noted."}
	})
	l := &toolLoop{t: t, s: s, client: s.client(option.WithHeader("X-Claude-Code-Session-Id", "steer")),
		history: []sdk.MessageParam{userMessage("run the tests")}}
	l.send()
	l.history = append(l.history, sdk.NewUserMessage(
		sdk.NewToolResultBlock("toolu_st", "2 failures", false),
		sdk.NewTextBlock("Only fix the first failure."),
	))
	l.send()
	if p := l.pids; len(p[1]) != 1 || p[1][0] != p[0][0] {
		t.Fatalf("steering started another process: %v", p)
	}
	// The CLI carries the instruction as its own message after the
	// results, never inside them.
	last := s.Upstream.Requests()[1]
	var resultText, instruction string
	msgs := last.Messages()
	for _, m := range msgs[len(msgs)-2:] {
		blocks, _ := m.(map[string]any)["content"].([]any)
		for _, b := range blocks {
			bm := b.(map[string]any)
			switch bm["type"] {
			case "tool_result":
				resultText += testkitText(bm["content"])
			case "text":
				instruction += bm["text"].(string)
			}
		}
	}
	if resultText != "2 failures" || !strings.Contains(instruction, "Only fix the first failure.") {
		t.Fatalf("tool result %q, instruction %q\n%s", resultText, instruction, last.PrettyBody())
	}
}

// Steering in a user message after the results (not beside them), as a
// client that keeps them apart sends it, continues the paused process
// too, with the instruction beside the results.
func TestSteeringAfterToolResultsContinuesThePausedProcess(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{sessions: true})
	s.Upstream.Respond(func(r testkit.Request) testkit.Reply {
		if toolResults(r) == 0 {
			return testkit.Reply{ToolUses: []testkit.ToolUse{{ID: "toolu_sa", Name: modelName("run_tests"), Input: map[string]any{}}}}
		}
		return testkit.Reply{Text: "Noted."}
	})
	l := &toolLoop{t: t, s: s, client: s.client(option.WithHeader("X-Claude-Code-Session-Id", "steer-after")),
		history: []sdk.MessageParam{userMessage("run the tests")}}
	l.send()
	l.history = append(l.history,
		sdk.NewUserMessage(sdk.NewToolResultBlock("toolu_sa", "2 failures", false)),
		userMessage("Only fix the first failure."),
	)
	l.send()
	if p := l.pids; len(p[1]) != 1 || p[1][0] != p[0][0] {
		t.Fatalf("steering after the results started another process: %v", p)
	}
	reqs := s.Upstream.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d upstream calls, want the paused turn's one more", len(reqs))
	}
	body := string(reqs[1].RawBody)
	if !strings.Contains(body, "2 failures") || !strings.Contains(body, "Only fix the first failure.") || strings.Count(body, "run the tests") != 1 {
		t.Fatalf("the continued turn's request:\n%s", reqs[1].PrettyBody())
	}
}

// A turn cut after the CLI took its tool results (the client left while
// the model answered them) leaves the session holding them. The client's
// next request carries that results message with blocks added (an
// interruption's note and the user's next words, as Claude Code merges
// them): it resumes where the CLI took the results and sends only the new
// blocks — no replay, the results not refused as delivered twice.
func TestResultsMessageThatGainedBlocksAppends(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{sessions: true})
	s.Upstream.Respond(func(r testkit.Request) testkit.Reply {
		switch body := string(r.RawBody); {
		case toolResults(r) == 0:
			return testkit.Reply{ToolUses: []testkit.ToolUse{{ID: "toolu_cut", Name: modelName("run_tests"), Input: map[string]any{}}}}
		case !strings.Contains(body, "do the second one"):
			return testkit.Reply{Hang: true} // the answer to the results, cut by the client
		}
		return testkit.Reply{Text: "Doing the second one."}
	})
	l := &toolLoop{t: t, s: s, client: s.client(option.WithHeader("X-Claude-Code-Session-Id", "cut-after-results")),
		history: []sdk.MessageParam{userMessage("run the tests")}}
	l.send()
	results := sdk.NewToolResultBlock("toolu_cut", "2 failures", false)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := l.client.Messages.New(ctx, sdk.MessageNewParams{Model: "test-model", MaxTokens: 1000, Tools: clientTools(),
			Messages: append(l.history, sdk.NewUserMessage(results))})
		done <- err
	}()
	waitFor(t, func() bool { return len(s.Upstream.Requests()) == 2 }) // the CLI took the results and asked the model
	cancel()
	<-done
	// The next request waits for the cut turn's lease, so it finds what
	// that turn recorded.

	msg, err := l.client.Messages.New(context.Background(), sdk.MessageNewParams{Model: "test-model", MaxTokens: 1000, Tools: clientTools(),
		Messages: append(l.history, sdk.NewUserMessage(results,
			sdk.NewTextBlock("[Request interrupted by user]"), sdk.NewTextBlock("Never mind, do the second one.")))})
	if err != nil || msg.Content[0].Text != "Doing the second one." {
		t.Fatalf("the next request: %v %+v", err, msg)
	}
	last := string(s.Upstream.Requests()[len(s.Upstream.Requests())-1].RawBody)
	if strings.Contains(last, "conversation_history") || strings.Count(last, "2 failures") != 1 || strings.Count(last, "run the tests") != 1 {
		t.Fatalf("the CLI did not continue after the results it held:\n%s", last)
	}
}
