package appserver

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/codexschema"
	"github.com/meridian-gw/meridian/internal/testkit"
)

// startCodex runs the pinned codex app-server against a fake upstream.
func startCodex(t *testing.T, up *testkit.ResponsesUpstream) (*Conn, *codexschema.Trace, *exec.Cmd) {
	t.Helper()
	proto, err := codexschema.Load()
	if err != nil {
		t.Fatal(err)
	}
	ck := codexschema.NewTrace(proto)
	home := testkit.CodexHome(t, up.URL, "gpt-test")
	cmd := exec.Command(testkit.CodexPath(t), "app-server")
	cmd.Env = []string{"HOME=" + t.TempDir(), "CODEX_HOME=" + home, "PATH=" + os.Getenv("PATH")}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := New(stdout, stdin, Options{Trace: ck.Line})
	t.Cleanup(func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		<-c.Done()
		for _, b := range ck.Problems() {
			t.Errorf("off the recorded protocol: %s", b)
		}
	})
	return c, ck, cmd
}

// text collects a turn's agent message deltas until it completes.
func text(t *testing.T, c *Conn, turnID string) (string, map[string]bool) {
	t.Helper()
	var b strings.Builder
	methods := map[string]bool{}
	timeout := time.After(30 * time.Second)
	for {
		select {
		case m, ok := <-c.Notifications():
			if !ok {
				t.Fatalf("codex ended mid-turn: %v", c.Err())
			}
			methods[m.Method] = true
			switch m.Method {
			case "item/agentMessage/delta":
				var d struct{ TurnID, Delta string }
				_ = json.Unmarshal(m.Params, &d)
				if d.TurnID == turnID {
					b.WriteString(d.Delta)
				}
			case "turn/completed":
				var done struct {
					Turn struct{ ID, Status string }
				}
				_ = json.Unmarshal(m.Params, &done)
				if done.Turn.ID == turnID {
					if done.Turn.Status != "completed" {
						t.Fatalf("turn %s ended %s", turnID, done.Turn.Status)
					}
					return b.String(), methods
				}
			}
		case <-timeout:
			t.Fatal("no turn/completed within 30 s")
		}
	}
}

// Two turns on one thread of the real codex: each answer streams as
// deltas; the second runs in the same process with the first in its
// history (codex resends it upstream); every line either side wrote is a
// message of the recorded protocol.
func TestTwoTurnsOnOneThread(t *testing.T) {
	up := testkit.NewResponsesUpstream(t, "Hello", " from", " upstream")
	c, ck, _ := startCodex(t, up)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var init struct{ UserAgent string }
	if err := c.Call(ctx, "initialize", map[string]any{"clientInfo": map[string]string{"name": "meridian", "version": "test"}}, &init); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(init.UserAgent, "meridian/") {
		t.Fatalf("initialize: %+v", init)
	}
	if err := c.Notify("initialized", nil); err != nil {
		t.Fatal(err)
	}
	var thread struct{ Thread struct{ ID string } }
	if err := c.Call(ctx, "thread/start", map[string]any{"cwd": t.TempDir(), "approvalPolicy": "never", "sandbox": "read-only"}, &thread); err != nil {
		t.Fatal(err)
	}
	for i, prompt := range []string{"the first question", "the second question"} {
		var turn struct{ Turn struct{ ID string } }
		if err := c.Call(ctx, "turn/start", map[string]any{"threadId": thread.Thread.ID,
			"input": []map[string]any{{"type": "text", "text": prompt, "text_elements": []any{}}}}, &turn); err != nil {
			t.Fatal(err)
		}
		got, methods := text(t, c, turn.Turn.ID)
		if got != "Hello from upstream" {
			t.Fatalf("turn %d: %q", i+1, got)
		}
		for _, m := range []string{"turn/started", "item/started", "item/completed", "thread/tokenUsage/updated"} {
			if !methods[m] {
				t.Errorf("turn %d: no %s", i+1, m)
			}
		}
	}
	reqs := up.Requests()
	if len(reqs) != 2 {
		t.Fatalf("the upstream got %d requests", len(reqs))
	}
	second, _ := json.Marshal(reqs[1]["input"])
	if !strings.Contains(string(second), "the first question") || !strings.Contains(string(second), "Hello from upstream") ||
		!strings.Contains(string(second), "the second question") {
		t.Fatalf("the second request's input lacks the first turn: %s", second)
	}
	if n := ck.Seen("item/agentMessage/delta"); n != 6 {
		t.Fatalf("deltas seen %d, want 3 a turn", n)
	}
}

// A request codex does not know is its error, with its code; a call
// outlived by its context returns; once codex's output ends every call
// says so and the notifications close.
func TestErrorsAndTheEnd(t *testing.T) {
	up := testkit.NewResponsesUpstream(t, "ok")
	c, _, cmd := startCodex(t, up)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Call(ctx, "initialize", map[string]any{"clientInfo": map[string]string{"name": "meridian", "version": "test"}}, nil); err != nil {
		t.Fatal(err)
	}
	err := c.Call(ctx, "thread/read", map[string]any{"threadId": "no-such-thread"}, nil)
	var e *Error
	if !errors.As(err, &e) || e.Message == "" {
		t.Fatalf("reading a thread that does not exist: %v", err)
	}
	short, cancelShort := context.WithCancel(context.Background())
	cancelShort()
	if err := c.Call(short, "model/list", map[string]any{}, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled call: %v", err)
	}
	_ = cmd.Process.Kill()
	select {
	case <-c.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the conn did not end with codex")
	}
	if err := c.Call(ctx, "model/list", map[string]any{}, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("a call after the end: %v", err)
	}
	for range c.Notifications() {
	}
	if err := c.Err(); !errors.Is(err, io.EOF) {
		t.Fatalf("the end's reason: %v", err)
	}
}
