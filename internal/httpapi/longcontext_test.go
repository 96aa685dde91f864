package httpapi_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/meridian-gw/meridian/internal/testkit"
)

const longModel = "claude-sonnet-4-5[1m]"

// long reports whether the CLI asked the upstream for long context.
func long(r testkit.Request) bool {
	return strings.Contains(r.Header.Get("Anthropic-Beta"), "context-1m")
}

// askLong sends text on conversation with the extended-context model and
// returns the answer's text.
func askLong(t *testing.T, s *stack, conversation, text string) string {
	t.Helper()
	p := simpleParams(text)
	p.Model = longModel
	msg, err := s.client(option.WithHeader("X-Claude-Code-Session-Id", conversation)).Messages.New(context.Background(), p)
	if err != nil {
		t.Fatalf("%s: %v", conversation, err)
	}
	return msg.Content[0].Text
}

// An account without the long-context entitlement refuses the variant:
// the request is answered on the standard model, and the variant is
// benched for the whole profile — another conversation does not try it.
func TestLongContextEntitlementBenchesTheProfile(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{sessions: true})
	var longTries atomic.Int32
	s.Upstream.Respond(func(r testkit.Request) testkit.Reply {
		if long(r) {
			longTries.Add(1)
			return testkit.Reply{Status: 429, ErrorType: "rate_limit_error", ErrorMessage: "Extra usage is required for long context requests.",
				Headers: map[string]string{"retry-after": "40"}}
		}
		return testkit.Reply{Text: "standard context"}
	})
	if got := askLong(t, s, "lc-1", "first"); got != "standard context" {
		t.Fatalf("first conversation: %q", got)
	}
	if got := askLong(t, s, "lc-2", "second"); got != "standard context" || longTries.Load() != 1 {
		t.Fatalf("another conversation: %q after %d long-context tries, want 1", got, longTries.Load())
	}
	reqs := s.Upstream.Requests()
	if m := reqs[len(reqs)-1].Body["model"]; m != "claude-sonnet-4-5" {
		t.Fatalf("the standard model asked was %v", m)
	}
}

// A plain rate limit on the variant benches only the conversation that
// hit it: it continues on the standard model, while its siblings keep the
// variant (and their caches).
func TestLongContextRateLimitBenchesTheConversation(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{sessions: true})
	var limitedTries atomic.Int32
	s.Upstream.Respond(func(r testkit.Request) testkit.Reply {
		switch {
		case long(r) && strings.Contains(r.AllText(), "busy"):
			limitedTries.Add(1)
			return testkit.Reply{Status: 429, ErrorType: "rate_limit_error", ErrorMessage: "Number of request tokens has exceeded your rate limit",
				Headers: map[string]string{"retry-after": "40"}}
		case long(r):
			return testkit.Reply{Text: "long context"}
		}
		return testkit.Reply{Text: "standard context"}
	})
	if got := askLong(t, s, "rl-1", "busy work"); got != "standard context" {
		t.Fatalf("the limited conversation: %q", got)
	}
	if got := askLong(t, s, "rl-2", "calm work"); got != "long context" {
		t.Fatalf("a sibling conversation: %q, want it to keep the variant", got)
	}
	p := sdk.MessageNewParams{Model: longModel, MaxTokens: 100, Messages: []sdk.MessageParam{
		userMessage("busy work"), sdk.NewAssistantMessage(sdk.NewTextBlock("standard context")), userMessage("busy again")}}
	msg, err := s.client(option.WithHeader("X-Claude-Code-Session-Id", "rl-1")).Messages.New(context.Background(), p)
	if err != nil || msg.Content[0].Text != "standard context" || limitedTries.Load() != 1 {
		t.Fatalf("the limited conversation's next turn: %v %v after %d long-context tries, want 1", msg, err, limitedTries.Load())
	}
}
