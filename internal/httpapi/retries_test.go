package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/meridian-gw/meridian/internal/answers"
	"github.com/meridian-gw/meridian/internal/testkit"
)

// replayed reports whether a response was answered from a saved answer.
func replayed(resp *http.Response) bool {
	return resp != nil && resp.Header.Get("X-Meridian-Replayed") == "true"
}

// The results of a paused turn are answered, but the client never sees
// the answer and sends the identical request again: it gets the same
// answer (the same message id, the same new tool-call ids), streamed as
// it asked, and the upstream sees no second call.
func TestLostAnswerToToolResultsIsReplayed(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "json", true: "stream"}[stream], func(t *testing.T) {
			t.Parallel()
			s := newStack(t, stackOptions{sessions: true})
			s.Upstream.Respond(func(r testkit.Request) testkit.Reply {
				if toolResults(r) == 0 {
					return testkit.Reply{ToolUses: []testkit.ToolUse{{ID: "toolu_r1", Name: modelName("read_file"), Input: map[string]any{"path": "a"}}}}
				}
				// The answer to the results is another batch.
				return testkit.Reply{Text: "now the tests", ToolUses: []testkit.ToolUse{{ID: "toolu_r2", Name: modelName("run_tests"), Input: map[string]any{}}}}
			})
			c := s.client(option.WithHeader("X-Claude-Code-Session-Id", "lost-"+t.Name()))
			history := []sdk.MessageParam{userMessage("read a")}
			first := send(t, c, history, stream, nil)
			history = append(history, first.ToParam(), sdk.NewUserMessage(sdk.NewToolResultBlock("toolu_r1", "a body", false)))

			var resp1, resp2 *http.Response
			answer := send(t, c, history, stream, &resp1)
			calls := len(s.Upstream.Requests())
			again := send(t, c, history, stream, &resp2)
			if replayed(resp1) || !replayed(resp2) {
				t.Fatalf("replayed: first %v, again %v", replayed(resp1), replayed(resp2))
			}
			a, b := mustJSON(t, answer), mustJSON(t, again)
			if a != b || answer.ID == "" || toolUses(again)[0].ID != "toolu_r2" {
				t.Fatalf("the retry got another answer:\n%s\n%s", a, b)
			}
			if n := len(s.Upstream.Requests()); n != calls {
				t.Fatalf("the retry reached the upstream: %d requests, was %d", n, calls)
			}
			// Answering the new batch is the next turn, and the request that
			// asked for it is no longer replayed.
			history = append(history, answer.ToParam(), sdk.NewUserMessage(sdk.NewToolResultBlock("toolu_r2", "ok", false)))
			s.Upstream.Always(testkit.Reply{Text: "all done"})
			if last := send(t, c, history, stream, nil); last.Content[0].Text != "all done" {
				t.Fatalf("next turn: %+v", last.Content)
			}
		})
	}
}

// The client drops the request before the answer exists: the turn is
// cancelled, and the retry runs it and is answered.
func TestRetryAfterADropBeforeTheAnswerRuns(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{sessions: true})
	var mu sync.Mutex
	slow := true
	s.Upstream.Respond(func(r testkit.Request) testkit.Reply {
		// The retry may reach the model as a replayed history rather than
		// as tool results: what counts is that the result reached it.
		if !strings.Contains(r.AllText(), "a body") {
			return testkit.Reply{ToolUses: []testkit.ToolUse{{ID: "toolu_d1", Name: modelName("read_file"), Input: map[string]any{"path": "a"}}}}
		}
		mu.Lock()
		defer mu.Unlock()
		if slow {
			slow = false
			return testkit.Reply{Text: "late", Delay: 30 * time.Second}
		}
		return testkit.Reply{Text: "read it"}
	})
	c := s.client(option.WithHeader("X-Claude-Code-Session-Id", "drop"))
	history := []sdk.MessageParam{userMessage("read a")}
	first := send(t, c, history, false, nil)
	history = append(history, first.ToParam(), sdk.NewUserMessage(sdk.NewToolResultBlock("toolu_d1", "a body", false)))

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.Messages.New(ctx, params(history))
		done <- err
	}()
	waitFor(t, func() bool { return strings.Contains(lastRequest(s).AllText(), "a body") })
	cancel()
	<-done
	var resp *http.Response
	msg, err := c.Messages.New(context.Background(), params(history), option.WithResponseInto(&resp))
	if err != nil || msg.Content[0].Text != "read it" || replayed(resp) {
		t.Fatalf("the retry: %+v %v (replayed %v)", msg, err, replayed(resp))
	}
}

// A plain prompt is replayed only when it names itself: with an
// Idempotency-Key the identical request gets the saved answer; without
// one it may be a deliberate regeneration, and runs again.
func TestPromptsWithARequestIDAreReplayed(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{sessions: true})
	n := 0
	var mu sync.Mutex
	s.Upstream.Respond(func(testkit.Request) testkit.Reply {
		mu.Lock()
		defer mu.Unlock()
		n++
		return testkit.Reply{Text: "answer " + string(rune('0'+n))}
	})
	c := s.client()
	keyed := option.WithHeader("Idempotency-Key", "req-7f3a")
	var r1, r2, r3 *http.Response
	a := send(t, c, []sdk.MessageParam{userMessage("name a colour")}, false, &r1, keyed)
	b := send(t, c, []sdk.MessageParam{userMessage("name a colour")}, true, &r2, keyed) // another body: stream
	again := send(t, c, []sdk.MessageParam{userMessage("name a colour")}, false, &r3, keyed)
	if !replayed(r3) || mustJSON(t, again) != mustJSON(t, a) || replayed(r2) || b.Content[0].Text == a.Content[0].Text {
		t.Fatalf("with a key: %s / %s / %s (replayed %v %v)", a.Content[0].Text, b.Content[0].Text, again.Content[0].Text, replayed(r2), replayed(r3))
	}
	var r4 *http.Response
	plain := send(t, c, []sdk.MessageParam{userMessage("name a colour")}, false, nil)
	plainAgain := send(t, c, []sdk.MessageParam{userMessage("name a colour")}, false, &r4)
	if replayed(r4) || plain.Content[0].Text == plainAgain.Content[0].Text {
		t.Fatalf("without a key the prompt was not run again: %q %q", plain.Content[0].Text, plainAgain.Content[0].Text)
	}
	if len(s.Upstream.Requests()) != 4 {
		t.Fatalf("%d upstream calls, want 4", len(s.Upstream.Requests()))
	}
}

// Three identical requests at once: one runs, the others wait for it and
// get the same answer; the upstream sees one call.
func TestConcurrentDuplicatesShareOneRun(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{sessions: true})
	s.Upstream.Always(testkit.Reply{Text: "once", Delay: 500 * time.Millisecond})
	c := s.client()
	keyed := option.WithHeader("Idempotency-Key", "dup-3")
	got := make([]string, 3)
	var replays int
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() {
			var resp *http.Response
			msg, err := c.Messages.New(context.Background(), simpleParams("only once"), keyed, option.WithResponseInto(&resp))
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			got[i] = mustJSON(t, msg)
			if replayed(resp) {
				replays++
			}
		})
	}
	wg.Wait()
	if got[0] != got[1] || got[1] != got[2] || replays != 2 {
		t.Fatalf("answers %q, %d replayed", got, replays)
	}
	if n := len(s.Upstream.Requests()); n != 1 {
		t.Fatalf("%d upstream calls", n)
	}
}

// An answer over the per-answer bound is not kept: its retry runs again.
func TestAnAnswerOverTheBoundIsNotKept(t *testing.T) {
	t.Parallel()
	lim := answers.DefaultLimits()
	lim.EntryBytes = 300
	s := newStack(t, stackOptions{answers: lim})
	s.Upstream.Always(testkit.Reply{Text: strings.Repeat("long ", 100)})
	c := s.client()
	keyed := option.WithHeader("Idempotency-Key", "big")
	var resp *http.Response
	send(t, c, []sdk.MessageParam{userMessage("say a lot")}, false, nil, keyed)
	send(t, c, []sdk.MessageParam{userMessage("say a lot")}, false, &resp, keyed)
	if replayed(resp) || len(s.Upstream.Requests()) != 2 {
		t.Fatalf("an answer over the bound was replayed (%d upstream calls)", len(s.Upstream.Requests()))
	}
}

func params(history []sdk.MessageParam) sdk.MessageNewParams {
	return sdk.MessageNewParams{Model: "test-model", MaxTokens: 1000, Messages: history, Tools: clientTools()}
}

// send makes one request, streamed or not, and returns the message.
func send(t *testing.T, c *sdk.Client, history []sdk.MessageParam, stream bool, resp **http.Response, opts ...option.RequestOption) *sdk.Message {
	t.Helper()
	if resp != nil {
		opts = append(opts, option.WithResponseInto(resp))
	}
	if !stream {
		msg, err := c.Messages.New(context.Background(), params(history), opts...)
		if err != nil {
			t.Fatal(err)
		}
		return msg
	}
	st := c.Messages.NewStreaming(context.Background(), params(history), opts...)
	var msg sdk.Message
	for st.Next() {
		if err := msg.Accumulate(st.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	return &msg
}

func mustJSON(t *testing.T, msg *sdk.Message) string {
	t.Helper()
	b, err := json.Marshal(msg.Content)
	if err != nil {
		t.Fatal(err)
	}
	return msg.ID + " " + string(b)
}

func lastRequest(s *stack) testkit.Request {
	reqs := s.Upstream.Requests()
	if len(reqs) == 0 {
		return testkit.Request{}
	}
	return reqs[len(reqs)-1]
}
