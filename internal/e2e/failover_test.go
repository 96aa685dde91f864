package e2e

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	oaioption "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// With --failover, a conversation answered by profile a continues on b
// when a refuses its next turn for a rate limit: the answer names b, the
// upstream sees the whole history under b's key, and each profile's config
// dir holds only its own turns. a is benched and skipped by the next
// requests; when b refuses too, the client gets 429 with the earlier
// reopening as its wait.
func TestFailoverMovesToTheNextProfile(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	const keyA, keyB = "sk-ant-a-SECRET", "sk-ant-b-SECRET"
	var aRefuses, bRefuses atomic.Bool
	var aCalls, bCalls atomic.Int32
	g.up.Respond(func(r testkit.Request) testkit.Reply {
		limited := testkit.Reply{Status: 429, ErrorType: "rate_limit_error", ErrorMessage: "slow down", Headers: map[string]string{"retry-after": "40"}}
		switch r.Header.Get("X-Api-Key") {
		case keyA:
			aCalls.Add(1)
			if aRefuses.Load() {
				return limited
			}
			return testkit.Reply{Text: "a answered"}
		case keyB:
			bCalls.Add(1)
			if bRefuses.Load() {
				limited.Headers = map[string]string{"retry-after": "300"}
				return limited
			}
		}
		return testkit.Reply{Text: "b answered"}
	})
	twoProfiles(t, g, keyA, keyB)
	g.start("--failover", "--log-level", "debug")

	resp, body, err := g.post(prompt("first"), "X-Claude-Code-Session-Id", "fo-1")
	if err != nil || resp.StatusCode != 200 || resp.Header.Get("X-Meridian-Profile") != "a" || !strings.Contains(body, "a answered") {
		t.Fatalf("first turn: %v %d %v %s", err, resp.StatusCode, resp.Header, body)
	}
	aRefuses.Store(true)
	two := `{"model":"test-model","max_tokens":100,"messages":[{"role":"user","content":"first"},{"role":"assistant","content":"a answered"},{"role":"user","content":"and then?"}]}`
	resp, body, err = g.post(two, "X-Claude-Code-Session-Id", "fo-1")
	if err != nil || resp.StatusCode != 200 || resp.Header.Get("X-Meridian-Profile") != "b" || !strings.Contains(body, "b answered") {
		t.Fatalf("second turn: %v %d %v %s", err, resp.StatusCode, resp.Header, body)
	}
	// a was benched before this answer came back (b's start included, which
	// takes seconds on a loaded machine).
	afterABench := time.Now()
	if aCalls.Load() != 2 || bCalls.Load() != 1 {
		t.Fatalf("upstream calls: a %d, b %d", aCalls.Load(), bCalls.Load())
	}
	reqs := g.up.Requests()
	last := reqs[len(reqs)-1]
	if last.Header.Get("X-Api-Key") != keyB || !strings.Contains(last.AllText(), "first") || !strings.Contains(last.AllText(), "a answered") || !strings.Contains(last.AllText(), "and then?") {
		t.Fatalf("the turn b answered lost its history:\n%s", last.RawBody)
	}
	// b's config dir holds the conversation as b continued it; a's holds
	// only what a answered.
	if !transcriptHas(t, g, "b", "and then?") {
		t.Fatal("no transcript of the conversation in b's config dir")
	}
	if !transcriptHas(t, g, "a", "a answered") || transcriptHas(t, g, "a", "b answered") {
		t.Fatal("a's config dir holds b's turns, or not its own")
	}

	// a is benched: a new conversation goes to b without asking a.
	resp, _, err = g.post(prompt("second"), "X-Claude-Code-Session-Id", "fo-2")
	if err != nil || resp.StatusCode != 200 || resp.Header.Get("X-Meridian-Profile") != "b" || aCalls.Load() != 2 {
		t.Fatalf("second conversation: %v %v, a asked %d times", err, resp.Header, aCalls.Load())
	}

	// b refuses too: every profile is benched; the wait is a's, the earlier
	// (both were benched for the default minute: the CLI passes on no wait
	// of an API-key refusal).
	bRefuses.Store(true)
	time.Sleep(2 * time.Second) // a's reopening and b's then lie seconds apart
	beforeBBench := time.Now()
	resp, body, err = g.post(prompt("third"), "X-Claude-Code-Session-Id", "fo-3")
	if err != nil || resp.StatusCode != 429 || !strings.Contains(body, "every profile is rate-limited") {
		t.Fatalf("third request: %v %d %s", err, resp.StatusCode, body)
	}
	// a reopens a minute after it was benched, b a minute after now: the
	// wait is a's, shorter by the time between.
	wait, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
	aLeft := int(math.Ceil((time.Minute - beforeBBench.Sub(afterABench)).Seconds())) + 1 // a second for rounding
	t.Logf("Retry-After %d, a's wait at most %d", wait, aLeft)
	if wait <= 0 || wait > aLeft {
		t.Fatalf("Retry-After %q, want a's reopening in at most %d s", resp.Header.Get("Retry-After"), aLeft)
	}
	if strings.Contains(body, "SECRET") {
		t.Fatal("an answer shows a key")
	}
}

// transcriptHas reports whether a transcript in profile's config dir
// contains text.
func transcriptHas(t *testing.T, g *gatewayProc, profile, text string) bool {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(g.dataDir, "profiles", profile, "projects", "*", "*.jsonl"))
	for _, f := range files {
		if b, _ := os.ReadFile(f); strings.Contains(string(b), text) {
			return true
		}
	}
	return false
}

// A benched profile is used again once its wait has passed: the CLI, left
// one retry, reports the upstream's retry-after (2 s) as its wait, and the
// bench lasts that long. New conversations go to it again; one that moved
// to b meanwhile stays with b.
func TestBenchedProfileIsUsedAgainAfterItsWait(t *testing.T) {
	t.Parallel()
	// The wait must outlast the first two requests on a slow machine (a
	// fresh CLI for b each time): 2 s did not, once, in CI.
	g := newGateway(t)
	const keyA, keyB = "sk-ant-a2-SECRET", "sk-ant-b2-SECRET"
	var aLimited atomic.Bool
	aLimited.Store(true)
	g.up.Respond(func(r testkit.Request) testkit.Reply {
		if r.Header.Get("X-Api-Key") == keyA && aLimited.Load() {
			return testkit.Reply{Status: 429, ErrorType: "rate_limit_error", ErrorMessage: "slow down", Headers: map[string]string{"retry-after": "8"}}
		}
		return testkit.Reply{Text: "answered"}
	})
	g.env = append(g.env, "CLAUDE_CODE_MAX_RETRIES=1") // the later entry wins
	twoProfiles(t, g, keyA, keyB)
	g.start("--failover", "--log-level", "debug")
	resp, _, err := g.post(prompt("first"))
	if err != nil || resp.StatusCode != 200 || resp.Header.Get("X-Meridian-Profile") != "b" {
		t.Fatalf("first request: %v %v", err, resp)
	}
	aLimited.Store(false)
	if resp, _, err := g.post(prompt("while benched"), "X-Claude-Code-Session-Id", "pinned"); err != nil || resp.Header.Get("X-Meridian-Profile") != "b" {
		t.Fatalf("while a is benched: %v %v", err, resp.Header)
	}
	attempt := 0
	err = testkit.WaitFor(20*time.Second, func() error {
		attempt++ // each a new conversation: one b answered stays with b
		resp, _, err := g.post(prompt(fmt.Sprint("after the wait ", attempt)))
		if err != nil {
			return err
		}
		if got := resp.Header.Get("X-Meridian-Profile"); got != "a" {
			return fmt.Errorf("answered by %s", got)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("a was not used again after its wait: %v", err)
	}
	// The conversation b served while a was benched stays with b.
	two := `{"model":"test-model","max_tokens":100,"messages":[{"role":"user","content":"while benched"},{"role":"assistant","content":"answered"},{"role":"user","content":"next"}]}`
	if resp, _, err := g.post(two, "X-Claude-Code-Session-Id", "pinned"); err != nil || resp.Header.Get("X-Meridian-Profile") != "b" {
		t.Fatalf("the conversation b served went to %v (%v)", resp.Header.Get("X-Meridian-Profile"), err)
	}
}

// twoProfiles adds api profiles a (priority 1, the default) and b
// (priority 2) with their keys, both against the fake upstream.
func twoProfiles(t *testing.T, g *gatewayProc, keyA, keyB string) {
	t.Helper()
	p := profileCLI{t: t, bin: g.bin, dataDir: g.dataDir, env: g.env}
	for _, add := range [][]string{{keyA, "a", "1"}, {keyB, "b", "2"}} {
		if out, code := p.run(add[0], "add", add[1], "--kind", "api", "--base-url", g.up.URL, "--priority", add[2]); code != 0 {
			t.Fatalf("add %s: %s", add[1], out)
		}
	}
	if out, code := p.run("", "default", "a"); code != 0 {
		t.Fatalf("default: %s", out)
	}
}

// Background responses go through the same dispatch as foreground ones:
// refused by a for its rate limit, a background turn fails over to b, and
// the conversation's next background turn stays with b although a has
// reopened (profile affinity).
func TestBackgroundResponsesFailOverAndKeepTheirProfile(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	const keyA, keyB = "sk-ant-a-SECRET", "sk-ant-b-SECRET"
	var aRefuses atomic.Bool
	var aCalls, bCalls atomic.Int32
	g.up.Respond(func(r testkit.Request) testkit.Reply {
		switch r.Header.Get("X-Api-Key") {
		case keyA:
			aCalls.Add(1)
			if aRefuses.Load() {
				return testkit.Reply{Status: 429, ErrorType: "rate_limit_error", ErrorMessage: "slow down"}
			}
			return testkit.Reply{Text: "a answered"}
		case keyB:
			bCalls.Add(1)
		}
		return testkit.Reply{Text: "b answered"}
	})
	twoProfiles(t, g, keyA, keyB)
	g.start("--failover")
	c := openai.NewClient(oaioption.WithBaseURL(g.url+"/v1"), oaioption.WithAPIKey("client-key"), oaioption.WithMaxRetries(0),
		oaioption.WithHeader("X-Claude-Code-Session-Id", "bg-fo"))
	ctx := context.Background()
	run := func(p responses.ResponseNewParams) *responses.Response {
		t.Helper()
		p.Background = openai.Bool(true)
		started, err := c.Responses.New(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		var got *responses.Response
		if err := testkit.WaitFor(60*time.Second, func() error {
			got, err = c.Responses.Get(ctx, started.ID, responses.ResponseGetParams{})
			if err != nil {
				return err
			}
			if got.Status == "queued" || got.Status == "in_progress" {
				return fmt.Errorf("still %s", got.Status)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return got
	}
	aRefuses.Store(true)
	first := run(responses.ResponseNewParams{Model: "test-model", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("first")}})
	if first.Status != "completed" || first.OutputText() != "b answered" {
		t.Fatalf("the refused background turn did not fail over: %s", first.RawJSON())
	}
	aRefuses.Store(false)
	before := aCalls.Load()
	p := responses.ResponseNewParams{Model: "test-model", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("and then?")},
		PreviousResponseID: openai.String(first.ID)}
	second := run(p)
	if second.Status != "completed" || second.OutputText() != "b answered" || aCalls.Load() != before {
		t.Fatalf("the conversation's next background turn left b: %s (a asked %d more times)", second.RawJSON(), aCalls.Load()-before)
	}
}
