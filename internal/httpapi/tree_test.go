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

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// family runs a Claude Code-style lead and two subagents (same session,
// their own agent ids), all held at the upstream, and returns the lead's
// cancel and each request's outcome.
type family struct {
	s          *stack
	cancelLead context.CancelFunc
	lead       chan error
	children   []chan error
}

func startFamily(t *testing.T, session string) *family {
	t.Helper()
	s := newStack(t, stackOptions{sessions: true, maxConcurrent: 4, telemetry: true})
	s.Upstream.Respond(testkit.When("quick child", testkit.Reply{Text: "child done"}, testkit.Reply{Hang: true}))
	f := &family{s: s, lead: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	f.cancelLead = cancel
	go func() {
		_, err := s.client(option.WithHeader("X-Claude-Code-Session-Id", session)).Messages.New(ctx, simpleParams("lead work"))
		f.lead <- err
	}()
	for _, agent := range []string{"a1", "a2"} {
		done := make(chan error, 1)
		f.children = append(f.children, done)
		go func() {
			c := s.client(option.WithHeader("X-Claude-Code-Session-Id", session), option.WithHeader("X-Claude-Code-Agent-Id", agent))
			_, err := c.Messages.New(context.Background(), simpleParams("subagent "+agent+" work"))
			done <- err
		}()
	}
	waitFor(t, func() bool { return len(testkit.Processes(s.Marker)) == 3 && len(s.Upstream.Requests()) == 3 })
	return f
}

// childrenCancelled waits for both subagents to be answered 499 and for
// their processes (and the lead's) to be gone: left processes remain,
// idle ones of conversations that finished.
func (f *family) childrenCancelled(t *testing.T, within time.Duration, left int) {
	t.Helper()
	began := time.Now()
	deadline := began.Add(testkit.Scale(within))
	for i, done := range f.children {
		select {
		case err := <-done:
			var ae *sdk.Error
			if !errors.As(err, &ae) || ae.StatusCode != 499 || !strings.Contains(ae.RawJSON(), "cancelled") {
				t.Fatalf("subagent %d: %v", i+1, err)
			}
		case <-time.After(time.Until(deadline)):
			t.Fatalf("subagent %d still runs %v after its lead was cancelled", i+1, testkit.Scale(within))
		}
	}
	if err := testkit.WaitFor(within, func() error {
		if n := len(testkit.Processes(f.s.Marker)); n != left {
			return fmt.Errorf("%d claude processes, want %d", n, left)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("subagents cancelled and every process gone %v after the lead", time.Since(began).Round(time.Millisecond))
}

// A lead whose client goes away takes its subagents' requests along.
func TestLeadDisconnectCancelsItsSubagents(t *testing.T) {
	t.Parallel()
	f := startFamily(t, "tree-1")
	f.cancelLead()
	if err := <-f.lead; !errors.Is(err, context.Canceled) {
		t.Fatalf("lead: %v", err)
	}
	f.childrenCancelled(t, 3*time.Second, 0)
}

// POST /v1/sessions/{key}/cancel cancels the lead's turn and its
// subagents'; an unknown key is 404.
func TestCancelSessionCancelsTheSubtree(t *testing.T) {
	t.Parallel()
	f := startFamily(t, "tree-2")
	resp, body := post(t, f.s, "/v1/sessions/tree-2/cancel")
	if resp.StatusCode != 200 {
		t.Fatalf("cancel: %d %s", resp.StatusCode, body)
	}
	var got struct{ Cancelled []string }
	if err := json.Unmarshal([]byte(body), &got); err != nil || fmt.Sprint(got.Cancelled) != "[tree-2 tree-2#agent-a1 tree-2#agent-a2]" {
		t.Fatalf("cancelled %s (%v)", body, err)
	}
	var ae *sdk.Error
	if err := <-f.lead; !errors.As(err, &ae) || ae.StatusCode != 499 {
		t.Fatalf("lead: %v", err)
	}
	f.childrenCancelled(t, 3*time.Second, 0)
	if resp, body := post(t, f.s, "/v1/sessions/nobody/cancel"); resp.StatusCode != 404 {
		t.Fatalf("unknown key: %d %s", resp.StatusCode, body)
	}
}

// A subagent that finishes does not cancel its lead; /inflight shows the
// lead running under the tree.
func TestFinishedSubagentLeavesItsLead(t *testing.T) {
	t.Parallel()
	f := startFamily(t, "tree-3")
	c := f.s.client(option.WithHeader("X-Claude-Code-Session-Id", "tree-3"), option.WithHeader("X-Claude-Code-Agent-Id", "a3"))
	if msg, err := c.Messages.New(context.Background(), simpleParams("quick child")); err != nil || msg.Content[0].Text != "child done" {
		t.Fatalf("quick child: %v %v", msg, err)
	}
	select {
	case err := <-f.lead:
		t.Fatalf("the lead ended when a child finished: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	resp, body := get(t, f.s, "/inflight")
	var in struct {
		Backends      map[string]struct{ Running int }
		Conversations map[string]int
		SessionTree   struct {
			LiveRequests   int `json:"live_requests"`
			LinkedRequests int `json:"linked_requests"`
		} `json:"session_tree"`
	}
	if err := json.Unmarshal([]byte(body), &in); err != nil || resp.StatusCode != 200 {
		t.Fatalf("inflight: %d %s", resp.StatusCode, body)
	}
	if in.Backends["claude"].Running != 3 || in.Conversations["tree-3"] != 1 || in.SessionTree.LiveRequests != 3 || in.SessionTree.LinkedRequests != 2 {
		t.Fatalf("inflight: %s", body)
	}
	// The dashboard's summary carries the same gauges.
	resp, body = get(t, f.s, "/telemetry/summary")
	var sum struct {
		SessionTree struct {
			LiveRequests   int `json:"live_requests"`
			LinkedRequests int `json:"linked_requests"`
		} `json:"session_tree"`
	}
	if err := json.Unmarshal([]byte(body), &sum); err != nil || resp.StatusCode != 200 || sum.SessionTree.LiveRequests != 3 || sum.SessionTree.LinkedRequests != 2 {
		t.Fatalf("summary: %d %s", resp.StatusCode, body)
	}
	f.cancelLead()
	f.childrenCancelled(t, 3*time.Second, 1) // the finished child's idle process
}

// A client that hangs up on one request of a conversation cancels nothing
// of that conversation's next request, which may already be on its way
// (the OpenAI SDKs close the stream at [DONE], while the request that
// wrote it is still finishing).
func TestLeavingSparesTheNextTurn(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{sessions: true, maxConcurrent: 4})
	s.Upstream.Respond(testkit.When("next turn", testkit.Reply{Text: "next done"}, testkit.Reply{Hang: true}))
	c := s.client(option.WithHeader("X-Claude-Code-Session-Id", "tree-4"))
	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() {
		_, err := c.Messages.New(ctx, simpleParams("first turn"))
		first <- err
	}()
	waitFor(t, func() bool { return len(s.Upstream.Requests()) == 1 })
	next := make(chan error, 1)
	go func() {
		msg, err := c.Messages.New(context.Background(), simpleParams("next turn"))
		if err == nil && msg.Content[0].Text != "next done" {
			err = fmt.Errorf("answered %q", msg.Content[0].Text)
		}
		next <- err
	}()
	waitFor(t, func() bool {
		_, body := get(t, s, "/inflight")
		return strings.Contains(body, `"tree-4":2`)
	})
	cancel()
	if err := <-first; !errors.Is(err, context.Canceled) {
		t.Fatalf("first: %v", err)
	}
	if err := <-next; err != nil {
		t.Fatalf("the next turn of the conversation whose client left: %v", err)
	}
}

func post(t *testing.T, s *stack, path string) (*http.Response, string) {
	t.Helper()
	resp, b := do(t, http.MethodPost, s.URL+path, "", nil)
	return resp, string(b)
}

func get(t *testing.T, s *stack, path string) (*http.Response, string) {
	t.Helper()
	resp, b := do(t, http.MethodGet, s.URL+path, "", nil)
	return resp, string(b)
}
