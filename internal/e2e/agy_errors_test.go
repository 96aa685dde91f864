package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// agy's failures reach the client in the Anthropic shape, with the status
// and wait a Claude failure of the same kind gets.
func TestAntigravityFailures(t *testing.T) {
	t.Parallel()
	exit1 := 1
	fail := func(match, msg string) map[string]any {
		return map[string]any{"match": match, "status": "ERROR", "error": msg, "exit": exit1}
	}
	g := newAgyGateway(t, map[string]any{"turns": []map[string]any{
		fail("quota", "Individual quota reached. Please upgrade your subscription to increase your limits. Resets in 2h0m0s."),
		fail("capacity", "agent executor error: generating and executing: Error 503, Message: The model is overloaded. Status: MODEL_CAPACITY_EXHAUSTED"),
		fail("exhausted", "agent executor error: generating and executing: Error 429, Message: Resource has been exhausted. Status: RESOURCE_EXHAUSTED"),
		fail("apikey", "agent executor error: generating and executing: Error 400, Message: API key not valid. Please pass a valid API key."),
		{"match": "terminated", "steps": []any{map[string]any{"type": "error_message"}}, "status": "ERROR", "error": "Agent execution terminated due to error.", "exit": exit1},
		fail("timeout", "timeout waiting for response"),
		// The result says little; the AGY_ERROR line says what happened.
		{"match": "agyerror", "status": "ERROR", "error": "agent executor error: generating and executing",
			"agy_error": `{"code":429,"status":"RESOURCE_EXHAUSTED","message":"Resource has been exhausted (e.g. check quota).","retryDelay":"17s"}`},
		{"match": "crash", "crash": true, "steps": []any{agyAnswer("never\n", 1, 1)}},
	}})
	g.start()
	for _, c := range []struct {
		prompt, model string
		status        int
		errType, says string
		wait          string
	}{
		{"quota", "", 429, "rate_limit_error", "Individual quota reached", "7200"},
		{"capacity", "", 529, "overloaded_error", "MODEL_CAPACITY_EXHAUSTED", "5"},
		{"exhausted", "", 429, "rate_limit_error", "RESOURCE_EXHAUSTED", "60"},
		{"apikey", "", 401, "authentication_error", "running `agy` in a terminal", ""},
		{"terminated", "", 500, "api_error", "Agent execution terminated", ""},
		{"timeout", "", 500, "api_error", "print timeout", ""},
		{"agyerror", "", 429, "rate_limit_error", "Resource has been exhausted", "17"},
		{"crash", "", 500, "api_error", "agy exited", ""},
		{"hello", "no-such-model", 400, "invalid_request_error", `model \"no-such-model\" is not one agy offers; the models are: gemini-3.8-flash-high, gemini-3.8-flash-low`, ""},
	} {
		t.Run(c.prompt, func(t *testing.T) {
			p := agyParams(c.prompt + " please")
			if c.model != "" {
				p.Model = sdk.Model(c.model)
			}
			_, err := g.client("fail-"+c.prompt).Messages.New(context.Background(), p)
			var ae *sdk.Error
			if !errors.As(err, &ae) {
				t.Fatalf("%v", err)
			}
			body := ae.RawJSON()
			if ae.StatusCode != c.status || !strings.Contains(body, `"type":"`+c.errType+`"`) || !strings.Contains(body, c.says) ||
				ae.Response.Header.Get("Retry-After") != c.wait {
				t.Fatalf("%d %s, Retry-After %q", ae.StatusCode, body, ae.Response.Header.Get("Retry-After"))
			}
			if strings.Contains(body, "/tmp/") {
				t.Fatalf("a local path in %s", body)
			}
		})
	}
}

// A turn agy stops writing in is ended by the stall watchdog with a 504
// that names agy, and that agy is killed.
func TestAntigravityStall(t *testing.T) {
	t.Parallel()
	g := newAgyGateway(t, map[string]any{"turns": []map[string]any{{"match": "stall", "stall": true}}})
	g.gatewayProc.start("--backend", "antigravity", "--agy-path", g.agy, "--stall-timeout", "1s")
	_, err := g.client("stalled").Messages.New(context.Background(), agyParams("stall forever"))
	var ae *sdk.Error
	if !errors.As(err, &ae) || ae.StatusCode != 504 || !strings.Contains(ae.RawJSON(), "agy produced no output") {
		t.Fatalf("stalled: %v", err)
	}
	g.noneLeft(t, "after the stall")
}

// A signed-out agy is a 401 that says how to sign in, and an old one a 503
// with the wait until it is checked again: both found before any session
// starts. A client that goes away mid-turn takes its agy process along.
func TestAntigravitySignedOutAndDisconnect(t *testing.T) {
	t.Parallel()
	out := newAgyGateway(t, map[string]any{"signed_out": true})
	out.start()
	// Checked before any session (a signed-out agy would sit on its login
	// prompt), and not again for a moment.
	checks := func() (n int) {
		for _, c := range out.calls() {
			if argv, _ := c["argv"].([]any); len(argv) > 0 && argv[len(argv)-1] == "models" {
				n++
			}
		}
		return n
	}
	var after []int
	for range 2 {
		_, err := out.client("signed-out").Messages.New(context.Background(), agyParams("hello"))
		var ae *sdk.Error
		if !errors.As(err, &ae) || ae.StatusCode != 401 || !strings.Contains(ae.RawJSON(), "agy is not signed in") || !strings.Contains(ae.RawJSON(), "running `agy` in a terminal") {
			t.Fatalf("signed out: %v", err)
		}
		after = append(after, checks())
	}
	if after[0] == 0 || after[1] != after[0] || len(out.sessions()) != 0 {
		t.Fatalf("agy asked %v times after each request, %d sessions", after, len(out.sessions()))
	}
	old := newAgyGateway(t, map[string]any{"version": "1.1.15"})
	old.start()
	_, err := old.client("old").Messages.New(context.Background(), agyParams("hello"))
	var ae *sdk.Error
	if !errors.As(err, &ae) || ae.StatusCode != 503 || !strings.Contains(ae.RawJSON(), "older than 1.1.18") || ae.Response.Header.Get("Retry-After") == "" {
		t.Fatalf("an old agy: %v", err)
	}

	// agy here ignores SIGTERM and leaves a child holding its stdout.
	g := newAgyGateway(t, map[string]any{"ignore_sigterm": true, "grandchild": true,
		"turns": []map[string]any{{"match": "stall", "stall": true}, {"steps": []any{agyAnswer("idle now\n", 1, 1)}}}})
	g.start()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, err := g.client("gone").Messages.New(ctx, agyParams("stall forever"), option.WithMaxRetries(0)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("stalled: %v", err)
	}
	g.noneLeft(t, "after its client left")
	// An idle live session, then shutdown.
	if _, err := g.client("idle").Messages.New(context.Background(), agyParams("hello")); err != nil || len(g.agys()) != 1 {
		t.Fatalf("idle session: %v, %d agy processes", err, len(g.agys()))
	}
	g.stop()
	g.noneLeft(t, "after shutdown")
}

// noneLeft waits until no agy process, nor any child one left, remains.
func (g *agyGateway) noneLeft(t *testing.T, when string) {
	t.Helper()
	if err := testkit.WaitFor(5*time.Second, func() error {
		if left := g.agys(); len(left) != 0 {
			return fmt.Errorf("agy processes %v %s", left, when)
		}
		for _, c := range g.calls() {
			if pid, ok := c["grandchild"].(float64); ok && testkit.Alive(int(pid)) {
				return fmt.Errorf("agy's child %d %s", int(pid), when)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
