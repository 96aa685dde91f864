package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// waitSpares waits until the stack keeps n spare processes and returns the
// claude processes then.
func waitSpares(t *testing.T, s *stack, n int) []int {
	t.Helper()
	if err := testkit.WaitFor(20*time.Second, func() error {
		if got := s.Gateway.Inflight().Backends["claude"].Spares; got != n {
			return fmt.Errorf("%d spares, want %d", got, n)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return testkit.Processes(s.Marker)
}

// A new conversation's first turn takes the spare started for its
// contract (after the first conversation showed which), is answered with
// its own system prompt and tools, and a replacement spare starts in the
// background.
func TestNewConversationTakesTheSpare(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{sessions: true, spares: 1})
	s.Upstream.Always(testkit.Reply{Text: "ok"})
	first := sdk.MessageNewParams{Model: "test-model", MaxTokens: 100, Messages: []sdk.MessageParam{userMessage("first conversation")}}
	if _, err := s.client(option.WithHeader("X-Claude-Code-Session-Id", "c1")).Messages.New(context.Background(), first); err != nil {
		t.Fatal(err)
	}
	before := waitSpares(t, s, 1)
	p := sdk.MessageNewParams{Model: "test-model", MaxTokens: 100, System: []sdk.TextBlockParam{{Text: "SECOND-SYSTEM"}},
		Messages: []sdk.MessageParam{userMessage("second conversation")}, Tools: clientTools()}
	var resp *http.Response
	if _, err := s.client(option.WithHeader("X-Claude-Code-Session-Id", "c2")).Messages.New(context.Background(), p, option.WithResponseInto(&resp)); err != nil {
		t.Fatal(err)
	}
	if pid := sessionPid(s, resp.Header.Get("X-Meridian-Session-Id")); !slices.Contains(before, pid) {
		t.Fatalf("the second conversation ran in process %d, not one of %v that waited before it: it did not take the spare", pid, before)
	}
	last := lastRequest(s)
	if !strings.Contains(string(last.RawBody), "SECOND-SYSTEM") || toolCount(last) != 2 {
		t.Fatalf("the spare did not carry the conversation's system prompt and tools:\n%s", last.PrettyBody())
	}
	// A replacement is started off the request path.
	waitSpares(t, s, 1)
	if n := len(testkit.Processes(s.Marker)); n != 3 {
		t.Fatalf("%d processes, want two conversations and a spare", n)
	}
}

// A spare serves only its start-time contract: a new conversation with
// another model starts its own process (and the upstream sees that model).
func TestSpareNeverServesAnotherContract(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{sessions: true, spares: 1})
	s.Upstream.Always(testkit.Reply{Text: "ok"})
	if _, err := s.client(option.WithHeader("X-Claude-Code-Session-Id", "a")).Messages.New(context.Background(), simpleParams("model one")); err != nil {
		t.Fatal(err)
	}
	spareSet := waitSpares(t, s, 1)
	other := simpleParams("another model")
	other.Model = "other-model"
	var resp *http.Response
	if _, err := s.client(option.WithHeader("X-Claude-Code-Session-Id", "b")).Messages.New(context.Background(), other, option.WithResponseInto(&resp)); err != nil {
		t.Fatal(err)
	}
	lastSession := resp.Header.Get("X-Meridian-Session-Id")
	if got := lastRequest(s).Body["model"]; got != "other-model" {
		t.Fatalf("the request ran with model %v", got)
	}
	if pid := sessionPid(s, lastSession); slices.Contains(spareSet, pid) || pid == 0 {
		t.Fatalf("the other model's conversation ran in process %d, one of %v that waited before it", pid, spareSet)
	}
}

// sessionPid finds the claude process running a CLI session: the session
// id is on its command line.
func sessionPid(s *stack, session string) int {
	for _, pid := range testkit.Processes(s.Marker) {
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if strings.Contains(string(cmdline), "--session-id="+session) {
			return pid
		}
	}
	return 0
}

func toolCount(r testkit.Request) int {
	tools, _ := r.Body["tools"].([]any)
	return len(tools)
}
