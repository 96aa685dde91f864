package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// With --failover, a request profile a refuses for its rate limit is
// answered by b (the answer names b); a is benched and skipped by the
// next requests; when b refuses too, the client gets 429 with the earlier
// reopening as its wait.
func TestFailoverMovesToTheNextProfile(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	const keyA, keyB = "sk-ant-a-SECRET", "sk-ant-b-SECRET"
	var bRefuses atomic.Bool
	var aCalls, bCalls atomic.Int32
	g.up.Respond(func(r testkit.Request) testkit.Reply {
		limited := testkit.Reply{Status: 429, ErrorType: "rate_limit_error", ErrorMessage: "slow down", Headers: map[string]string{"retry-after": "40"}}
		switch r.Header.Get("X-Api-Key") {
		case keyA:
			aCalls.Add(1)
			return limited
		case keyB:
			bCalls.Add(1)
			if bRefuses.Load() {
				limited.Headers = map[string]string{"retry-after": "300"}
				return limited
			}
		}
		return testkit.Reply{Text: "answered"}
	})
	twoProfiles(t, g, keyA, keyB)
	g.start("--failover", "--log-level", "debug")

	resp, body, err := g.post(prompt("first"), "X-Claude-Code-Session-Id", "fo-1")
	if err != nil || resp.StatusCode != 200 || resp.Header.Get("X-Meridian-Profile") != "b" || !strings.Contains(body, "answered") {
		t.Fatalf("first request: %v %d %v %s", err, resp.StatusCode, resp.Header, body)
	}
	if aCalls.Load() != 1 || bCalls.Load() != 1 {
		t.Fatalf("upstream calls: a %d, b %d", aCalls.Load(), bCalls.Load())
	}
	// a is benched: the next request goes to b without asking a.
	resp, _, err = g.post(prompt("second"), "X-Claude-Code-Session-Id", "fo-2")
	if err != nil || resp.StatusCode != 200 || resp.Header.Get("X-Meridian-Profile") != "b" || aCalls.Load() != 1 {
		t.Fatalf("second request: %v %v, a asked %d times", err, resp.Header, aCalls.Load())
	}
	// The first conversation continues on b with its history, and only b's
	// config dir holds its transcript.
	two := `{"model":"test-model","max_tokens":100,"messages":[{"role":"user","content":"first"},{"role":"assistant","content":"answered"},{"role":"user","content":"and then?"}]}`
	resp, _, err = g.post(two, "X-Claude-Code-Session-Id", "fo-1")
	if err != nil || resp.StatusCode != 200 || resp.Header.Get("X-Meridian-Profile") != "b" {
		t.Fatalf("the conversation's second turn: %v %v", err, resp.Header)
	}
	reqs := g.up.Requests()
	last := string(reqs[len(reqs)-1].RawBody)
	if !strings.Contains(last, "first") || !strings.Contains(last, "answered") || !strings.Contains(last, "and then?") {
		t.Fatalf("the second turn lost its history:\n%s", last)
	}
	if b, _ := filepath.Glob(filepath.Join(g.dataDir, "profiles", "b", "projects", "*", "*.jsonl")); len(b) == 0 {
		t.Fatal("no transcript in b's config dir")
	}
	// a keeps only its own refused attempt, nothing b answered.
	a, _ := filepath.Glob(filepath.Join(g.dataDir, "profiles", "a", "projects", "*", "*.jsonl"))
	for _, f := range a {
		if b, _ := os.ReadFile(f); strings.Contains(string(b), "answered") {
			t.Fatalf("a's config dir holds b's conversation: %s", f)
		}
	}

	// b refuses too: every profile is benched; the wait is a's, the earlier
	// (both were benched for the default minute: the CLI passes on no wait
	// of an API-key refusal).
	bRefuses.Store(true)
	resp, body, err = g.post(prompt("third"), "X-Claude-Code-Session-Id", "fo-3")
	if err != nil || resp.StatusCode != 429 || !strings.Contains(body, "every profile is rate-limited") {
		t.Fatalf("third request: %v %d %s", err, resp.StatusCode, body)
	}
	wait, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
	t.Logf("Retry-After %d", wait)
	if wait <= 0 || wait > 60 {
		t.Fatalf("Retry-After %q", resp.Header.Get("Retry-After"))
	}
	if strings.Contains(body, "SECRET") {
		t.Fatal("an answer shows a key")
	}
}

// A benched profile is used again once its wait has passed: the CLI, left
// one retry, reports the upstream's retry-after (2 s) as its wait, and the
// bench lasts that long.
func TestBenchedProfileIsUsedAgainAfterItsWait(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	const keyA, keyB = "sk-ant-a2-SECRET", "sk-ant-b2-SECRET"
	var aLimited atomic.Bool
	aLimited.Store(true)
	g.up.Respond(func(r testkit.Request) testkit.Reply {
		if r.Header.Get("X-Api-Key") == keyA && aLimited.Load() {
			return testkit.Reply{Status: 429, ErrorType: "rate_limit_error", ErrorMessage: "slow down", Headers: map[string]string{"retry-after": "2"}}
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
	if resp, _, err := g.post(prompt("while benched")); err != nil || resp.Header.Get("X-Meridian-Profile") != "b" {
		t.Fatalf("while a is benched: %v %v", err, resp.Header)
	}
	err = testkit.WaitFor(10*time.Second, func() error {
		resp, _, err := g.post(prompt("after the wait"))
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
