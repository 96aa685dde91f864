package claude_test

import (
	"context"
	"encoding/json"
	"errors"
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

// A tool added between turns reaches the model on the same process: the
// CLI honours notifications/tools/list_changed from our server, re-reads
// the list, and the next turn's request offers the new tool, which the
// model can call. Removals and changed definitions it ignores.
func TestSetToolsKeepsTheProcess(t *testing.T) {
	t.Parallel()
	up := testkit.NewUpstream(t)
	up.Respond(func(r testkit.Request) testkit.Reply {
		if strings.Contains(string(r.RawBody), `"mcp__c__write_file"`) && !strings.Contains(string(r.RawBody), `"tool_result"`) {
			return testkit.Reply{ToolUses: []testkit.ToolUse{{ID: "toolu_w", Name: "mcp__c__write_file", Input: map[string]any{"path": "x"}}}}
		}
		return testkit.Reply{Text: "ok"}
	})
	d, marker := newDriver(t, up)
	s, err := d.Start(context.Background(), backend.StartOptions{Model: "test-model", Dir: t.TempDir(), Tools: []backend.Tool{readFileTool()}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var c collector
	if _, err := s.Turn(context.Background(), userText("first"), c.emit); err != nil {
		t.Fatal(err)
	}
	pids := testkit.Processes(marker)

	write := backend.Tool{Name: "write_file", Description: "Write a file", InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	began := time.Now()
	if err := s.(backend.ToolSetter).SetTools(ctx, []backend.Tool{readFileTool(), write}); err != nil {
		t.Fatal(err)
	}
	t.Logf("the CLI re-read the tool list in %v", time.Since(began).Round(time.Millisecond))

	var calls []string
	res, err := s.Turn(context.Background(), userText("write x"), func(ev *backend.Event) error {
		if ev.Kind == backend.BlockStart && ev.BlockType == "tool_use" {
			calls = append(calls, string(ev.Block))
		}
		if ev.Kind == backend.MessageDelta && ev.StopReason == "tool_use" {
			return backend.ErrPause
		}
		return nil
	})
	if err != nil || !res.Paused || len(calls) != 1 || !strings.Contains(calls[0], `"name":"write_file"`) {
		reqs := up.Requests()
		t.Fatalf("turn 2: %+v %v calls %q\nlast request:\n%s", res, err, calls, reqs[len(reqs)-1].PrettyBody())
	}
	if now := testkit.Processes(marker); fmt.Sprint(now) != fmt.Sprint(pids) {
		t.Fatalf("the process changed: %v then %v", pids, now)
	}
	// Mid-turn the list is fixed.
	if err := s.(backend.ToolSetter).SetTools(ctx, []backend.Tool{readFileTool()}); !errors.Is(err, backend.ErrToolsFixed) {
		t.Fatalf("SetTools on a paused turn: %v", err)
	}
	if _, err := s.Turn(context.Background(), backend.Input{Results: []backend.ToolResult{
		{ToolUseID: "toolu_w", Content: []json.RawMessage{json.RawMessage(`{"type":"text","text":"written"}`)}},
	}}, c.emit); err != nil {
		t.Fatal(err)
	}
	// What the gateway relies on (toolsFit): the CLI only adds to its
	// list. A tool dropped from it and a changed definition stay as the
	// CLI first read them, so those changes need a new process.
	changed := readFileTool()
	changed.Description = "CHANGED-DESCRIPTION"
	if err := s.(backend.ToolSetter).SetTools(ctx, []backend.Tool{changed}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Turn(context.Background(), userText("third"), c.emit); err != nil {
		t.Fatal(err)
	}
	reqs := up.Requests()
	tools, _ := json.Marshal(reqs[len(reqs)-1].Body["tools"])
	if !strings.Contains(string(tools), `"mcp__c__write_file"`) || strings.Contains(string(tools), "CHANGED-DESCRIPTION") {
		t.Fatalf("claude %s now drops or redefines tools on list_changed: the gateway could keep more processes; turn 3 offered %s", testkit.ClaudeVersion(t), tools)
	}
}

// A CLI that never re-reads its tools (here a stand-in that ignores
// control requests) does not hang SetTools: the caller's deadline ends it,
// and the process, whose tool list is now in doubt, takes no more turns.
func TestSetToolsThatIsNeverReadBreaksTheProcess(t *testing.T) {
	t.Parallel()
	path, scriptEnv := testkit.FakeClaude(t, "@user", testkit.FakeInit, testkit.FakeMessageStart, testkit.FakeTextStart,
		testkit.FakeTextDelta("hi"), testkit.FakeTextStop, testkit.FakeMessageDelta, testkit.FakeMessageStop, testkit.FakeResult)
	env, marker := testkit.ClaudeEnv(t, "http://127.0.0.1:1")
	d := claude.New(claude.Config{Path: path, Env: append(env, scriptEnv)})
	s, err := d.Start(context.Background(), backend.StartOptions{Model: "test-model", Dir: t.TempDir(), Tools: []backend.Tool{readFileTool()}})
	if err != nil {
		t.Fatal(err)
	}
	var c collector
	if _, err := s.Turn(context.Background(), userText("hello"), c.emit); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	write := backend.Tool{Name: "write_file", InputSchema: json.RawMessage(`{"type":"object"}`)}
	if err := s.(backend.ToolSetter).SetTools(ctx, []backend.Tool{readFileTool(), write}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("SetTools = %v", err)
	}
	if s.Alive() {
		t.Fatal("a process whose tool list is in doubt still takes turns")
	}
	if err := s.Close(); err != nil {
		t.Log(err)
	}
	testkit.WaitNoProcesses(t, marker, 5*time.Second)
}

// A live process frozen while idle uses no CPU, answers its next turn once
// thawed, and closes while frozen.
func TestFreezeAndThaw(t *testing.T) {
	t.Parallel()
	up := testkit.NewUpstream(t)
	up.Always(testkit.Reply{Text: "ok"})
	d, marker := newDriver(t, up)
	s, err := d.Start(context.Background(), backend.StartOptions{Model: "test-model", Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	var c collector
	if _, err := s.Turn(context.Background(), userText("one"), c.emit); err != nil {
		t.Fatal(err)
	}
	if mem, err := s.(backend.Measurer).Memory(); err != nil || mem < 10<<20 {
		t.Fatalf("memory %d, %v", mem, err)
	}
	f := s.(backend.Freezer)
	if err := f.Freeze(); err != nil {
		t.Fatal(err)
	}
	pid := testkit.Processes(marker)[0]
	before := testkit.CPUTicks(pid)
	time.Sleep(2 * time.Second)
	if used := testkit.CPUTicks(pid) - before; used != 0 {
		t.Fatalf("a frozen process used %d ticks", used)
	}
	if err := f.Thaw(); err != nil {
		t.Fatal(err)
	}
	if res, err := s.Turn(context.Background(), userText("two"), c.emit); err != nil || res.Failure != nil {
		t.Fatalf("after thawing: %+v %v", res, err)
	}
	if err := f.Freeze(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitNoProcesses(t, marker, 5*time.Second)
}

// A stderr line over the kept bound (here 2 MiB, past the 1 MiB) does not
// end the stderr reader: the CLI then writes more stderr than a pipe holds
// unread, and its turn still completes instead of sitting until the stall
// timeout.
func TestALongStderrLineDoesNotStallTheTurn(t *testing.T) {
	t.Parallel()
	path, scriptEnv := testkit.FakeClaude(t, "@user", "@stderr-bytes 2097152", testkit.FakeInit, testkit.FakeMessageStart, testkit.FakeTextStart,
		testkit.FakeTextDelta("hi"), testkit.FakeTextStop, testkit.FakeMessageDelta, testkit.FakeMessageStop, testkit.FakeResult)
	env, marker := testkit.ClaudeEnv(t, "http://127.0.0.1:1")
	d := claude.New(claude.Config{Path: path, Env: append(env, scriptEnv)})
	s, err := d.Start(context.Background(), backend.StartOptions{Model: "test-model", Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		s.Close()
		testkit.WaitNoProcesses(t, marker, 5*time.Second)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var c collector
	res, err := s.Turn(ctx, userText("hello"), c.emit)
	if err != nil || res.Failure != nil {
		t.Fatalf("the turn after a long stderr line: %v %+v", err, res)
	}
}
