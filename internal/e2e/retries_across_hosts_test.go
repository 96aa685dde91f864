package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// A duplicate of a running request (same request id and body) that
// reaches another host waits there for the first one's answer and gets
// it, marked replayed: an Anthropic SDK client with its default retries
// (two, for a 409) would otherwise have given up long before a 10 s
// answer. The upstream sees the prompt once.
func TestADuplicateOnAnotherHostGetsTheFirstAnswer(t *testing.T) {
	t.Parallel()
	up := testkit.NewUpstream(t)
	up.Respond(func(r testkit.Request) testkit.Reply {
		return testkit.Reply{Text: "the considered answer to " + r.LastUserText(), Delay: 10 * time.Second}
	})
	_, hosts := routedHosts(t, up)
	a, b := hosts[0], hosts[1]
	params := sdk.MessageNewParams{Model: "test-model", MaxTokens: 100,
		Messages: []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock("a question worth ten seconds"))}}
	client := func(g *gatewayProc) sdk.Client {
		return sdk.NewClient(option.WithBaseURL(g.url), option.WithAPIKey("client-key"), option.WithHeader("Idempotency-Key", "dup-1"))
	}
	first := make(chan error, 1)
	started := time.Now()
	go func() {
		ca := client(a)
		msg, err := ca.Messages.New(context.Background(), params)
		if err == nil && !strings.Contains(messageText(msg), "the considered answer") {
			err = fmt.Errorf("the first request got %q", messageText(msg))
		}
		first <- err
	}()
	waitUpstreamHas(t, up, "worth ten seconds")
	cb := client(b)
	var resp *http.Response
	msg, err := cb.Messages.New(context.Background(), params, option.WithResponseInto(&resp))
	if err != nil {
		t.Fatalf("the duplicate through b: %v", err)
	}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if got := messageText(msg); !strings.Contains(got, "the considered answer to a question worth ten seconds") ||
		resp.Header.Get("X-Meridian-Replayed") != "true" || resp.Header.Get("X-Meridian-Host") != hostID(t, b) {
		t.Fatalf("the duplicate got %q (replayed %q, host %q)", got, resp.Header.Get("X-Meridian-Replayed"), resp.Header.Get("X-Meridian-Host"))
	}
	if n := upstreamHad(up, "worth ten seconds"); n != 1 {
		t.Fatalf("the upstream saw the prompt %d times", n)
	}
	t.Logf("the duplicate through another host got the first answer, replayed, %v after the first began", time.Since(started).Round(100*time.Millisecond))
}

// A named request relayed to its conversation's holder, which is killed
// before it answers: the relaying host's very answer says the outcome is
// unknown and that it is not run a second time, not that an identical
// request is running (nothing is), and so does the client's retry.
func TestARelayedRequestWhoseHolderDiesHasAnUnknownOutcome(t *testing.T) {
	t.Parallel()
	up := testkit.NewUpstream(t)
	up.Respond(func(r testkit.Request) testkit.Reply {
		if strings.Contains(r.LastUserText(), "long story") {
			return testkit.Reply{Hang: true}
		}
		return testkit.Reply{Text: "answer to " + r.LastUserText()}
	})
	_, hosts := routedHosts(t, up)
	a, b := hosts[0], hosts[1]
	if resp, body, err := a.post(prompt("hello"), "X-Claude-Code-Session-Id", "orphan"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("turn 1 through a: %v %s", err, body)
	}
	turn2 := `{"model":"test-model","max_tokens":100,"messages":[{"role":"user","content":"hello"},` +
		`{"role":"assistant","content":"answer to hello"},{"role":"user","content":"tell me a long story"}]}`
	answered := make(chan string, 1)
	go func() {
		resp, body, err := b.post(turn2, "X-Claude-Code-Session-Id", "orphan", "Idempotency-Key", "orphan-2")
		if err != nil {
			answered <- err.Error()
			return
		}
		answered <- fmt.Sprint(resp.StatusCode, " ", resp.Header.Get("X-Meridian-Host"), " ", body)
	}()
	waitUpstreamHas(t, up, "long story")
	a.kill9()
	killed := time.Now()
	got := <-answered
	if !strings.HasPrefix(got, "409 "+hostID(t, b)) || !strings.Contains(got, "outcome is unknown") || strings.Contains(got, "is running") {
		t.Fatalf("the relayed request whose holder died: %s", got)
	}
	t.Logf("answered %v after the holder was killed: %s", time.Since(killed).Round(time.Millisecond), got)
	resp, body, err := b.post(turn2, "X-Claude-Code-Session-Id", "orphan", "Idempotency-Key", "orphan-2")
	if err != nil || resp.StatusCode != http.StatusConflict || !strings.Contains(body, "outcome is unknown") {
		t.Fatalf("its retry: %v %v %s", err, resp, body)
	}
}
