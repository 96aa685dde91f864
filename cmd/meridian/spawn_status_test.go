package main

import (
	"bytes"
	"context"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// A child that runs a slow tool: its first answer calls Bash (sleep), its
// second ends the run.
func slowToolChild(w *spawnWorld) {
	w.up.Respond(func(r testkit.Request) testkit.Reply {
		if !bytes.Contains(r.RawBody, []byte(`"tool_result"`)) {
			return testkit.Reply{ToolUses: []testkit.ToolUse{{ID: "toolu_1", Name: "Bash", Input: map[string]any{
				"command": "sleep 3", "description": "take a while",
			}}}}
		}
		return testkit.Reply{Text: "REPORT-DONE"}
	})
}

// `meridian spawn wait` on a terminal shows a live line per running child
// (elapsed, tokens, the tool it runs) that redraws in place and is erased
// before the report prints; piped, it prints plain lines without escapes.
func TestSpawnWaitShowsLiveStatusLines(t *testing.T) {
	t.Parallel()
	w := newSpawnWorld(t, buildBinary(t), testkit.ClaudePath(t))
	slowToolChild(w)
	w.must("spawn", "-p", "slow work", "--desc", "slow-tool")

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, w.bin, "spawn", "wait")
	cmd.Dir, cmd.Env = w.project, slices.Clone(w.env)
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 30, Cols: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	var screen bytes.Buffer
	_, _ = io.Copy(&screen, tty) // until the command exits and the pty closes
	if err := cmd.Wait(); err != nil {
		t.Fatalf("spawn wait: %v\n%q", err, screen.String())
	}
	out := screen.String()
	last := strings.LastIndex(out, "p1 running")
	report := strings.Index(out, "REPORT-DONE")
	if last < 0 || report < 0 || !strings.Contains(out, "Bash") || !strings.Contains(out, "slow-tool") {
		t.Fatalf("no live line with the tool, or no report:\n%q", out)
	}
	// Redrawn in place: the block went back up over itself at least once.
	if !strings.Contains(out, "\x1b[1A") {
		t.Fatalf("the line was never redrawn in place:\n%q", out)
	}
	// Erased before the report, and nothing of it after.
	if erase := strings.Index(out[last:], "\r\x1b[J"); erase < 0 || last+erase > report {
		t.Fatalf("the live line was not erased before the report:\n%q", out)
	}

	// Piped: plain lines, no escapes.
	w.must("spawn", "-p", "slow work again", "--desc", "piped")
	r := w.run("spawn", "wait")
	if r.code != 0 || strings.Contains(r.out, "\x1b") || !strings.Contains(r.out, "p2 running") || !strings.Contains(r.out, "Bash") {
		t.Fatalf("piped wait: exit %d\n%q", r.code, r.out)
	}
}
