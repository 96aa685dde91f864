package httpapi_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/meridian-gw/meridian/internal/backend/claude"
	"github.com/meridian-gw/meridian/internal/testkit"
)

// waitForProcess returns once the stack has a live claude process.
func waitForProcess(t *testing.T, marker string) {
	t.Helper()
	waitFor(t, func() bool { return len(testkit.Processes(marker)) > 0 })
}

func TestClientDisconnectMidStreamStopsClaude(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	s.Upstream.Always(testkit.Reply{Text: strings.Repeat("word ", 400), ChunkSize: 5, ChunkDelay: 50 * time.Millisecond})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream := s.client().Messages.NewStreaming(ctx, sdk.MessageNewParams{
		Model: "test-model", MaxTokens: 100, Messages: []sdk.MessageParam{userMessage("talk for a while")},
	})
	for stream.Next() {
		if stream.Current().Type == "content_block_delta" {
			break
		}
	}
	if len(testkit.Processes(s.Marker)) == 0 {
		t.Fatal("claude is not running while its stream is open")
	}
	cancel()
	_ = stream.Close()
	testkit.WaitNoProcesses(t, s.Marker, 3*time.Second)
}

func TestClientDisconnectBeforeOutputStopsClaude(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	s.Upstream.Always(testkit.Reply{Text: "late", Delay: 30 * time.Second})

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := s.client().Messages.New(ctx, sdk.MessageNewParams{
			Model: "test-model", MaxTokens: 100, Messages: []sdk.MessageParam{userMessage("hi")},
		})
		done <- err
	}()
	waitForProcess(t, s.Marker)
	// Wait until the CLI is waiting on the upstream: the turn is underway.
	waitFor(t, func() bool { return len(s.Upstream.Requests()) > 0 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("client error = %v, want context.Canceled", err)
	}
	testkit.WaitNoProcesses(t, s.Marker, 3*time.Second)
}

func TestQueuedRequestLeavesWhenClientGoes(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{maxConcurrent: 1, queueTimeout: time.Minute})
	s.Upstream.Always(testkit.Reply{Text: "slow", Delay: 2 * time.Second})

	var wg sync.WaitGroup
	wg.Go(func() {
		if err := newMessage(s, "first"); err != nil {
			t.Errorf("first request: %v", err)
		}
	})
	waitForProcess(t, s.Marker)

	ctx, cancel := context.WithCancel(context.Background())
	queued := make(chan error, 1)
	go func() {
		_, err := s.client().Messages.New(ctx, sdk.MessageNewParams{
			Model: "test-model", MaxTokens: 100, Messages: []sdk.MessageParam{userMessage("second")},
		})
		queued <- err
	}()
	waitFor(t, func() bool { _, waiting, _ := s.Gateway.Slots(); return waiting == 1 })
	cancel()
	<-queued
	waitFor(t, func() bool { _, waiting, _ := s.Gateway.Slots(); return waiting == 0 })
	wg.Wait()
	if n := len(s.Upstream.Requests()); n != 1 {
		t.Fatalf("upstream saw %d requests; the cancelled one must never have run", n)
	}
}

func TestQueueTimeoutIsOverloaded(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{maxConcurrent: 1, queueTimeout: 300 * time.Millisecond})
	s.Upstream.Always(testkit.Reply{Text: "slow", Delay: 3 * time.Second})

	var wg sync.WaitGroup
	wg.Go(func() { _ = newMessage(s, "first") })
	waitForProcess(t, s.Marker)

	ae := apiError(t, newMessage(s, "second"))
	if ae.StatusCode != 529 || ae.Type() != "overloaded_error" {
		t.Fatalf("got %d %s, want 529 overloaded_error", ae.StatusCode, ae.Type())
	}
	retryAfter(t, ae)
	wg.Wait()
}

// A CLI that ignores the interrupt and SIGTERM is killed, and joined.
func TestHungClaudeIsKilled(t *testing.T) {
	t.Parallel()
	path, scriptEnv := testkit.FakeClaude(t, "@user", testkit.FakeInit, testkit.FakeMessageStart,
		testkit.FakeTextStart, testkit.FakeTextDelta("stuck"), "@hang")
	s := newStack(t, stackOptions{
		claudePath: path, env: []string{scriptEnv},
		graces: claude.Config{InterruptGrace: 300 * time.Millisecond, ExitGrace: 200 * time.Millisecond, KillGrace: 300 * time.Millisecond},
	})
	ctx, cancel := context.WithCancel(context.Background())
	stream := s.client().Messages.NewStreaming(ctx, sdk.MessageNewParams{
		Model: "test-model", MaxTokens: 100, Messages: []sdk.MessageParam{userMessage("hi")},
	})
	for stream.Next() {
		if stream.Current().Type == "content_block_delta" {
			break
		}
	}
	cancel()
	_ = stream.Close()
	testkit.WaitNoProcesses(t, s.Marker, 2*time.Second)
}

// waitFor fails the test unless cond holds within 10 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	if err := testkit.WaitFor(10*time.Second, func() error {
		if !cond() {
			return errors.New("condition not reached")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// Shutdown is not a client that left: a request it cuts short before any
// output gets 503 with Retry-After, a stream it cuts mid-answer ends with
// an error event carrying the wait — never an empty 200 or a silent cut.
func TestShutdownAnswersRunningRequests(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{drainTimeout: 300 * time.Millisecond})
	s.Upstream.Respond(func(r testkit.Request) testkit.Reply {
		if strings.Contains(r.LastUserText(), "stream") {
			return testkit.Reply{Chunks: []string{"first words ", "never sent"}, StallAfter: 3} // start, block, first delta
		}
		return testkit.Reply{Text: "never", Hang: true}
	})
	jsonDone := make(chan error, 1)
	go func() { jsonDone <- newMessage(s, "plain") }()

	st := s.client().Messages.NewStreaming(context.Background(), simpleParams("stream"))
	var msg sdk.Message
	for st.Next() {
		_ = msg.Accumulate(st.Current())
		if len(msg.Content) == 1 && msg.Content[0].Text != "" {
			break // the answer has begun
		}
	}
	waitFor(t, func() bool { return len(s.Upstream.Requests()) == 2 })
	go s.stop()
	for st.Next() {
	}
	ae := apiError(t, st.Err())
	if !strings.Contains(ae.RawJSON(), "shutting down") || !strings.Contains(ae.RawJSON(), `"retry_after":`) {
		t.Fatalf("stream ended with %s, want a shutdown error event with its wait", ae.RawJSON())
	}
	je := apiError(t, <-jsonDone)
	if je.StatusCode != 503 || !strings.Contains(je.RawJSON(), "shutting down") {
		t.Fatalf("JSON request: %d %s", je.StatusCode, je.RawJSON())
	}
	retryAfter(t, je)
}

// A CLI that goes silent mid-answer (and ignores the interrupt and
// SIGTERM) is stopped by the stall watchdog: a stream ends with an error
// event, a JSON request gets a 504, and no process is left.
func TestSilentClaudeIsStoppedByTheWatchdog(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{true, false} {
		t.Run(map[bool]string{true: "stream", false: "json"}[stream], func(t *testing.T) {
			t.Parallel()
			path, scriptEnv := testkit.FakeClaude(t, "@user", testkit.FakeInit, testkit.FakeMessageStart,
				testkit.FakeTextStart, testkit.FakeTextDelta("and then"), "@hang")
			s := newStack(t, stackOptions{
				claudePath: path, env: []string{scriptEnv}, stallTimeout: 500 * time.Millisecond, pingInterval: 100 * time.Millisecond,
				graces: claude.Config{InterruptGrace: 200 * time.Millisecond, ExitGrace: 100 * time.Millisecond, KillGrace: 200 * time.Millisecond},
			})
			began := time.Now()
			p := sdk.MessageNewParams{Model: "test-model", MaxTokens: 100, Messages: []sdk.MessageParam{userMessage("hi")}}
			if stream {
				st := s.client().Messages.NewStreaming(context.Background(), p)
				var text string
				for st.Next() {
					if ev := st.Current(); ev.Type == "content_block_delta" {
						text += ev.Delta.Text
					}
				}
				var ae *sdk.Error
				if !errors.As(st.Err(), &ae) || !strings.Contains(ae.RawJSON(), "no output") || text != "and then" {
					t.Fatalf("stream ended with %v after %q", st.Err(), text)
				}
			} else {
				_, err := s.client().Messages.New(context.Background(), p)
				if ae := apiError(t, err); ae.StatusCode != http.StatusGatewayTimeout || ae.Type() != "timeout_error" {
					t.Fatalf("got %d %s", ae.StatusCode, ae.RawJSON())
				}
			}
			t.Logf("stopped %v after the request began", time.Since(began).Round(time.Millisecond))
			testkit.WaitNoProcesses(t, s.Marker, 3*time.Second)
		})
	}
}
