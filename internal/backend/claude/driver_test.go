package claude_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/backend"
	"github.com/meridian-gw/meridian/internal/backend/claude"
	"github.com/meridian-gw/meridian/internal/testkit"
)

// collector gathers a turn's events.
type collector struct {
	kinds []backend.EventKind
	text  strings.Builder
}

func (c *collector) emit(ev *backend.Event) error {
	c.kinds = append(c.kinds, ev.Kind)
	if ev.Kind == backend.BlockDelta && ev.DeltaType == "text_delta" {
		c.text.WriteString(ev.Text)
	}
	return nil
}

func userText(s string) backend.Input {
	return backend.Input{Content: []json.RawMessage{json.RawMessage(`{"type":"text","text":` + strconv.Quote(s) + `}`)}}
}

func newDriver(t *testing.T, up *testkit.Upstream) (*claude.Driver, string) {
	t.Helper()
	env, marker := testkit.ClaudeEnv(t, up.URL)
	d := claude.New(claude.Config{Path: testkit.ClaudePath(t), Env: env})
	return d, marker
}

func TestTurnRelaysTextAndUsage(t *testing.T) {
	t.Parallel()
	up := testkit.NewUpstream(t)
	up.Always(testkit.Reply{Text: "Hello from the fake", ChunkSize: 4, Usage: testkit.Usage{InputTokens: 11, OutputTokens: 7, CacheReadInputTokens: 3}})
	d, marker := newDriver(t, up)

	s, err := d.Start(context.Background(), backend.StartOptions{Model: "test-model", System: []string{"be brief"}, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for turn := 1; turn <= 2; turn++ {
		var c collector
		res, err := s.Turn(context.Background(), userText("hi"), c.emit)
		if err != nil {
			t.Fatal(err)
		}
		if res.Failure != nil {
			t.Fatalf("turn %d failed: %+v", turn, res.Failure)
		}
		if got := c.text.String(); got != "Hello from the fake" {
			t.Fatalf("turn %d text = %q", turn, got)
		}
		// The CLI's result usage is per turn, not cumulative.
		want := backend.Usage{InputTokens: 11, OutputTokens: 7, CacheReadInputTokens: 3}
		if res.Usage != want {
			t.Fatalf("turn %d usage = %+v, want %+v", turn, res.Usage, want)
		}
		if res.StopReason != "end_turn" || res.SessionID == "" || s.ID() != res.SessionID {
			t.Fatalf("turn %d result = %+v", turn, res)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitNoProcesses(t, marker, time.Second)
	reqs := up.Requests()
	if len(reqs) != 2 {
		t.Fatalf("upstream saw %d requests", len(reqs))
	}
	if sys := reqs[0].SystemText(); !strings.Contains(sys, "be brief") {
		t.Fatalf("system prompt not passed: %q", sys)
	}
	if tools, _ := reqs[0].Body["tools"].([]any); len(tools) != 0 {
		t.Fatalf("built-in tools offered: %d", len(tools))
	}
}

func readFileTool() backend.Tool {
	return backend.Tool{Name: "read_file", Description: "Read a file", InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)}
}

// A client tool call pauses the turn inside the CLI; the results continue
// the same turn on the same process.
func TestClientToolCallPausesAndContinues(t *testing.T) {
	t.Parallel()
	up := testkit.NewUpstream(t)
	up.Enqueue(testkit.Reply{Text: "reading both", ToolUses: []testkit.ToolUse{
		{ID: "toolu_a", Name: "mcp__c__read_file", Input: map[string]any{"path": "a.go"}},
		{ID: "toolu_b", Name: "mcp__c__read_file", Input: map[string]any{"path": "b.go"}},
	}})
	up.Always(testkit.Reply{Text: "both read"})
	d, marker := newDriver(t, up)
	s, err := d.Start(context.Background(), backend.StartOptions{Model: "test-model", Dir: t.TempDir(), Tools: []backend.Tool{readFileTool()}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	var calls []string
	pause := func(ev *backend.Event) error {
		if ev.Kind == backend.BlockStart && ev.BlockType == "tool_use" {
			calls = append(calls, string(ev.Block))
		}
		if ev.Kind == backend.MessageDelta && ev.StopReason == "tool_use" {
			return backend.ErrPause
		}
		return nil
	}
	res, err := s.Turn(context.Background(), userText("read a and b"), pause)
	if err != nil || !res.Paused {
		t.Fatalf("turn: %+v %v", res, err)
	}
	if len(calls) != 2 || !strings.Contains(calls[0], `"name":"read_file"`) || !strings.Contains(calls[1], `"id":"toolu_b"`) {
		t.Fatalf("tool calls relayed as %q", calls)
	}
	pids := testkit.Processes(marker)

	var c collector
	res, err = s.Turn(context.Background(), backend.Input{Results: []backend.ToolResult{
		{ToolUseID: "toolu_b", Content: []json.RawMessage{json.RawMessage(`{"type":"text","text":"B body"}`)}},
		{ToolUseID: "toolu_a", Content: []json.RawMessage{json.RawMessage(`{"type":"text","text":"A body"}`)}, IsError: true},
	}}, c.emit)
	if err != nil || res.Paused || res.Failure != nil || c.text.String() != "both read" {
		t.Fatalf("continued turn: %+v %v %q", res, err, c.text.String())
	}
	if now := testkit.Processes(marker); fmt.Sprint(now) != fmt.Sprint(pids) {
		t.Fatalf("the turn moved to another process: %v then %v", pids, now)
	}
	reqs := up.Requests()
	body := string(reqs[len(reqs)-1].RawBody)
	for _, want := range []string{`"tool_use_id":"toolu_a"`, `A body`, `"is_error":true`, `"tool_use_id":"toolu_b"`, `B body`} {
		if !strings.Contains(body, want) {
			t.Fatalf("upstream request lacks %s:\n%s", want, reqs[len(reqs)-1].PrettyBody())
		}
	}
}
