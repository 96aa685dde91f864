package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/meridian-gw/meridian/internal/backend/claude"
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

// gatedLauncher starts real CLIs, but once closed holds every launch until
// opened again.
type gatedLauncher struct {
	held chan struct{} // receives when a launch waits at the gate
	mu   sync.Mutex
	gate chan struct{} // closed: launches pass
	open bool
}

func (l *gatedLauncher) Launch(spec claude.Spec) (claude.Proc, error) {
	l.mu.Lock()
	gate := l.gate
	l.mu.Unlock()
	select {
	case <-gate:
	default:
		l.held <- struct{}{}
		<-gate
	}
	return claude.ExecLauncher{}.Launch(spec)
}

func (l *gatedLauncher) set(open bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case open && !l.open:
		close(l.gate)
	case !open && l.open:
		l.gate = make(chan struct{})
	}
	l.open = open
}

// The spare a conversation takes is replaced off the request path: with
// every launch held, the conversation's answer arrives while its
// replacement waits to start, and the replacement starts once launches
// pass again.
func TestSpareIsReplacedOffTheRequestPath(t *testing.T) {
	t.Parallel()
	launches := &gatedLauncher{held: make(chan struct{}, 4), gate: make(chan struct{})}
	launches.set(true)
	s := newStack(t, stackOptions{sessions: true, spares: 1, launcher: launches})
	t.Cleanup(func() { launches.set(true) }) // before the stack closes: nothing waits at the gate
	s.Upstream.Always(testkit.Reply{Text: "ok"})
	if _, err := s.client(option.WithHeader("X-Claude-Code-Session-Id", "a")).Messages.New(context.Background(), simpleParams("first")); err != nil {
		t.Fatal(err)
	}
	spare := waitSpares(t, s, 1)
	launches.set(false)
	// Were the replacement on the request path, this answer would wait at
	// the gate until the deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var resp *http.Response
	if _, err := s.client(option.WithHeader("X-Claude-Code-Session-Id", "b")).Messages.New(ctx, simpleParams("second"), option.WithResponseInto(&resp)); err != nil {
		t.Fatal(err)
	}
	if pid := sessionPid(s, resp.Header.Get("X-Meridian-Session-Id")); !slices.Contains(spare, pid) {
		t.Fatalf("the conversation ran in process %d, not the spare %v", pid, spare)
	}
	select {
	case <-launches.held: // the replacement waits at the gate; the answer came first
	case <-time.After(testkit.Scale(10 * time.Second)):
		t.Fatal("no replacement was launched")
	}
	launches.set(true)
	waitSpares(t, s, 1)
}

// A burst of new conversations at once grows the spares to its size, in
// the idle time after it, so the next such burst is answered by spares
// alone.
func TestABurstGrowsTheSpares(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{sessions: true, spares: 1, sparesMax: 4})
	s.Upstream.Always(testkit.Reply{Text: "ok"})
	if _, err := s.client(option.WithHeader("X-Claude-Code-Session-Id", "first")).Messages.New(context.Background(), simpleParams("first")); err != nil {
		t.Fatal(err)
	}
	waitSpares(t, s, 1)
	burst := func(name string) []string {
		sessions := make([]string, 4)
		var wg sync.WaitGroup
		for i := range sessions {
			wg.Go(func() {
				var resp *http.Response
				key := fmt.Sprintf("%s-%d", name, i)
				if _, err := s.client(option.WithHeader("X-Claude-Code-Session-Id", key)).Messages.New(context.Background(), simpleParams(key), option.WithResponseInto(&resp)); err != nil {
					t.Error(err)
					return
				}
				sessions[i] = resp.Header.Get("X-Meridian-Session-Id")
			})
		}
		wg.Wait()
		return sessions
	}
	burst("teach")
	waiting := waitSpares(t, s, 4)
	for _, session := range burst("again") {
		if pid := sessionPid(s, session); !slices.Contains(waiting, pid) {
			t.Errorf("a conversation of the second burst ran in process %d, not one of the %v waiting before it", pid, waiting)
		}
	}
}
