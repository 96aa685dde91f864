package claude_test

import (
	"context"
	"encoding/json"
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
