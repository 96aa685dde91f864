package httpapi_test

import (
	"context"
	"strings"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/meridian-gw/meridian/internal/testkit"
)

var scriptedUsage = testkit.Usage{InputTokens: 11, OutputTokens: 7, CacheCreationInputTokens: 5, CacheReadInputTokens: 3}

func wantUsage(t *testing.T, got sdk.Usage) {
	t.Helper()
	if got.InputTokens != 11 || got.OutputTokens != 7 || got.CacheCreationInputTokens != 5 || got.CacheReadInputTokens != 3 {
		t.Fatalf("usage = in %d out %d cache_write %d cache_read %d, want 11/7/5/3",
			got.InputTokens, got.OutputTokens, got.CacheCreationInputTokens, got.CacheReadInputTokens)
	}
}

func TestMessagesNonStreaming(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	s.Upstream.Always(testkit.Reply{Text: "The scripted answer.", Usage: scriptedUsage})

	msg, err := s.client().Messages.New(context.Background(), sdk.MessageNewParams{
		Model:     "test-model",
		MaxTokens: 1024,
		System:    []sdk.TextBlockParam{{Text: "You answer tests."}},
		Messages:  []sdk.MessageParam{userMessage("hello")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(msg.Content) != 1 || msg.Content[0].Text != "The scripted answer." {
		t.Fatalf("content = %+v", msg.Content)
	}
	if msg.Model != "test-model" || msg.StopReason != sdk.StopReasonEndTurn || !strings.HasPrefix(msg.ID, "msg_") {
		t.Fatalf("message = id %q model %q stop %q", msg.ID, msg.Model, msg.StopReason)
	}
	wantUsage(t, msg.Usage)

	reqs := s.Upstream.Requests()
	if len(reqs) != 1 {
		t.Fatalf("upstream saw %d requests, want 1", len(reqs))
	}
	if got := reqs[0].Body["model"]; got != "test-model" {
		t.Fatalf("upstream model = %v", got)
	}
	if sys := reqs[0].SystemText(); !strings.Contains(sys, "You answer tests.") {
		t.Fatalf("system prompt did not reach the upstream: %q", sys)
	}
	if got := reqs[0].LastUserText(); got != "hello" {
		t.Fatalf("upstream user text = %q", got)
	}
}

func TestMessagesStreaming(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	s.Upstream.Always(testkit.Reply{Text: "Streamed in several pieces.", ChunkSize: 5, Usage: scriptedUsage})

	stream := s.client().Messages.NewStreaming(context.Background(), sdk.MessageNewParams{
		Model:     "test-model",
		MaxTokens: 1024,
		Messages:  []sdk.MessageParam{userMessage("stream please")},
	})
	var msg sdk.Message
	var kinds []string
	var deltas int
	for stream.Next() {
		ev := stream.Current()
		kinds = append(kinds, ev.Type)
		if ev.Type == "content_block_delta" {
			deltas++
		}
		if err := msg.Accumulate(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	want := "message_start content_block_start " + strings.Repeat("content_block_delta ", deltas) + "content_block_stop message_delta message_stop"
	if got := strings.Join(kinds, " "); got != want {
		t.Fatalf("event order:\n got %s\nwant %s", got, want)
	}
	if deltas < 2 {
		t.Fatalf("text arrived in %d deltas, want it streamed in pieces", deltas)
	}
	if len(msg.Content) != 1 || msg.Content[0].Text != "Streamed in several pieces." {
		t.Fatalf("content = %+v", msg.Content)
	}
	if msg.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("stop reason = %q", msg.StopReason)
	}
	wantUsage(t, msg.Usage)
}
