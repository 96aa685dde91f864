package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// One-offs of one contract run one after another in one process: once two
// are kept, a third with the same system prompt and tools takes the oldest
// one's process, emptied, and the model sees the new conversation alone.
// The conversation it took the process from is answered with its own
// history when it continues after all; a conversation of another system
// prompt never takes it.
func TestOneOffsOfOneContractShareAProcess(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{sessions: true})
	s.Upstream.Always(testkit.Reply{Text: "ok"})
	params := func(system string, msgs ...sdk.MessageParam) sdk.MessageNewParams {
		return sdk.MessageNewParams{Model: "test-model", MaxTokens: 100, System: []sdk.TextBlockParam{{Text: system}},
			Messages: msgs, Tools: clientTools()}
	}
	send := func(p sdk.MessageNewParams) string {
		t.Helper()
		var resp *http.Response
		if _, err := s.client().Messages.New(context.Background(), p, option.WithResponseInto(&resp)); err != nil {
			t.Fatal(err)
		}
		return resp.Header.Get("X-Meridian-Session-Id")
	}
	first := send(params("TITLE-SYSTEM", userMessage("one-off alpha")))
	second := send(params("TITLE-SYSTEM", userMessage("one-off beta")))
	if second == first {
		t.Fatal("the second one-off ran in the first one's session while fewer than two were kept")
	}
	third := send(params("TITLE-SYSTEM", userMessage("one-off gamma")))
	if third != first {
		t.Fatalf("the third one-off ran in session %s, not the first one's process (%s)", third, first)
	}
	if text := lastRequest(s).AllText(); strings.Contains(text, "alpha") || !strings.Contains(text, "gamma") {
		t.Fatalf("the model saw, for the third one-off:\n%s", text)
	}
	if other := send(params("OTHER-SYSTEM", userMessage("one-off delta"))); other == first || other == second {
		t.Fatal("a one-off of another system prompt took a kept one-off's process")
	}

	// The third continues live, with its own history only.
	if got := send(params("TITLE-SYSTEM", userMessage("one-off gamma"), sdk.NewAssistantMessage(sdk.NewTextBlock("ok")), userMessage("gamma follow-up"))); got != first {
		t.Fatalf("the third one-off's next turn ran in session %s, not its live process", got)
	}
	if text := lastRequest(s).AllText(); strings.Contains(text, "alpha") || !strings.Contains(text, "gamma follow-up") {
		t.Fatalf("the model saw, for the third one-off's next turn:\n%s", text)
	}
	// The first, whose process it took, starts over with its history.
	send(params("TITLE-SYSTEM", userMessage("one-off alpha"), sdk.NewAssistantMessage(sdk.NewTextBlock("ok")), userMessage("alpha follow-up")))
	if text := lastRequest(s).AllText(); strings.Contains(text, "gamma") || !strings.Contains(text, "one-off alpha") ||
		!strings.Contains(text, "alpha follow-up") {
		t.Fatalf("the model saw, for the first one-off's next turn:\n%s", text)
	}
}
