package agy_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/backend"
	"github.com/meridian-gw/meridian/internal/backend/agy"
	"github.com/meridian-gw/meridian/internal/testkit"
)

// stand is the driver over the agy stand-in playing a scenario.
type stand struct {
	d     *agy.Driver
	calls func() []map[string]any
	dir   string
}

func newStand(t *testing.T, scenario map[string]any) *stand {
	t.Helper()
	path, env, calls := testkit.FakeAgy(t, scenario)
	d := agy.New(agy.Config{Path: path, Env: env, SessionRoot: t.TempDir(), ExitGrace: 500 * time.Millisecond, KillGrace: 500 * time.Millisecond})
	return &stand{d: d, calls: calls, dir: t.TempDir()}
}

func (s *stand) start(t *testing.T, opts backend.StartOptions) backend.Session {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = s.dir
	}
	sess, err := s.d.Start(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	return sess
}

// collector gathers a turn's text.
type collector struct {
	text  strings.Builder
	kinds []backend.EventKind
}

func (c *collector) emit(ev *backend.Event) error {
	c.kinds = append(c.kinds, ev.Kind)
	if ev.Kind == backend.BlockDelta {
		c.text.WriteString(ev.Text)
	}
	return nil
}

func text(s string) backend.Input {
	b, _ := json.Marshal(map[string]string{"type": "text", "text": s})
	return backend.Input{Content: []json.RawMessage{b}}
}

func turn(t *testing.T, sess backend.Session, prompt string) (*backend.Result, string) {
	t.Helper()
	var c collector
	res, err := sess.Turn(context.Background(), text(prompt), c.emit)
	if err != nil {
		t.Fatal(err)
	}
	return res, c.text.String()
}

func answer(text string, in, out int) map[string]any {
	return map[string]any{"type": "agent_response", "text": text, "usage": map[string]int{"input_tokens": in, "output_tokens": out, "total_tokens": in + out}}
}

func TestVersionModelsAndAuth(t *testing.T) {
	t.Parallel()
	s := newStand(t, map[string]any{"version": "1.2.17"})
	if v, err := s.d.Version(context.Background()); err != nil || v != "1.2.17" {
		t.Fatalf("version %q %v", v, err)
	}
	models, err := s.d.Models(context.Background())
	if err != nil || len(models) != 4 || models[1].ID != "gemini-3.8-flash-low" || models[1].DisplayName != "Gemini 3.8 Flash (Low)" {
		t.Fatalf("models %+v %v", models, err)
	}
	if a, err := s.d.Auth(context.Background()); err != nil || !a.LoggedIn {
		t.Fatalf("auth %+v %v", a, err)
	}
	old := newStand(t, map[string]any{"version": "1.1.15", "signed_out": true})
	if _, err := old.d.Version(context.Background()); !errors.Is(err, backend.ErrUnavailable) || !strings.Contains(err.Error(), "older than 1.1.18") {
		t.Fatalf("an old agy: %v", err)
	}
	if a, err := old.d.Auth(context.Background()); err != nil || a.LoggedIn {
		t.Fatalf("signed out: %+v %v", a, err)
	}
	// A missing agy says where agy comes from.
	if _, err := agy.New(agy.Config{Path: filepath.Join(t.TempDir(), "agy")}).Locate(); !errors.Is(err, backend.ErrUnavailable) ||
		!strings.Contains(err.Error(), "antigravity.google/cli") || !strings.Contains(err.Error(), "--agy-path") {
		t.Fatalf("missing agy: %v", err)
	}
}

// Two turns on one process: the text arrives in fragments, each turn's
// usage is its own (agy reports the conversation's totals), and agy was
// started (after its version and login were checked) as a persistent
// session with the gate's folder and the auto-update off.
func TestTwoTurnsOnOneProcess(t *testing.T) {
	t.Parallel()
	s := newStand(t, map[string]any{"turns": []map[string]any{
		{"match": "first", "steps": []any{answer("The first answer has several words.\n", 100, 7)}},
		{"match": "second", "steps": []any{answer("Second.\n", 130, 2)}},
	}})
	sess := s.start(t, backend.StartOptions{Model: "gemini-3.8-flash-low"})
	res, got := turn(t, sess, "first question")
	if got != "The first answer has several words.\n" || res.Failure != nil || res.Usage != (backend.Usage{InputTokens: 100, OutputTokens: 7}) || res.Model != "gemini-3.8-flash-low" {
		t.Fatalf("turn 1: %q %+v", got, res)
	}
	id := sess.ID()
	res, got = turn(t, sess, "second question")
	if got != "Second.\n" || res.Usage != (backend.Usage{InputTokens: 130, OutputTokens: 2}) || res.SessionID != id || id == "" {
		t.Fatalf("turn 2: %q %+v (id %s)", got, res, id)
	}
	var starts, stdin int
	for _, c := range s.calls() {
		if argv, ok := c["argv"].([]any); ok && strings.Contains(jsonOf(argv), "--input-format") {
			starts++
			joined := strings.Trim(strings.Join(strings.Fields(strings.Trim(strings.ReplaceAll(strings.ReplaceAll(jsonOf(argv), `","`, " "), `"`, ""), "[]")), " "), " ")
			for _, want := range []string{"--input-format stream-json", "--output-format stream-json", "--disable-slash-commands", "--model gemini-3.8-flash-low", "--add-dir " + s.dir} {
				if !strings.Contains(joined, want) {
					t.Errorf("argv %s lacks %q", joined, want)
				}
			}
			env := c["env"].(map[string]any)
			if env["AGY_CLI_DISABLE_AUTO_UPDATE"] != "true" {
				t.Errorf("env %v", env)
			}
		}
		if _, ok := c["stdin"]; ok {
			stdin++
		}
	}
	if starts != 1 || stdin != 2 {
		t.Fatalf("%d processes, %d stdin lines", starts, stdin)
	}
}

func jsonOf(v any) string { b, _ := json.Marshal(v); return string(b) }

// A conversation continues in a new process by its id; an id agy does
// not know is a stale session, never a silent fresh start.
func TestResumeAndUnknownConversation(t *testing.T) {
	t.Parallel()
	s := newStand(t, map[string]any{"turns": []map[string]any{{"steps": []any{answer("ok\n", 50, 1)}}}})
	first := s.start(t, backend.StartOptions{})
	turn(t, first, "one")
	id := first.ID()
	first.Close()
	again := s.start(t, backend.StartOptions{Resume: id})
	res, got := turn(t, again, "two")
	if res.Failure != nil || got != "ok\n" || again.ID() != id || res.Usage.InputTokens != 50 {
		t.Fatalf("resumed: %q %+v, id %s want %s", got, res, again.ID(), id)
	}
	lost := s.start(t, backend.StartOptions{Resume: "00000000-0000-4000-8000-000000000000"})
	res, _ = turn(t, lost, "three")
	if res.Failure == nil || res.Failure.Code != backend.CodeStaleSession {
		t.Fatalf("unknown conversation: %+v", res.Failure)
	}
}

// A recorded real stream, played through the driver, gives agy's answer.
func TestRecordedStreamThroughTheDriver(t *testing.T) {
	t.Parallel()
	rec, _ := filepath.Abs(filepath.Join("events", "testdata", "recorded", "1.2.17-tool.ndjson"))
	s := newStand(t, map[string]any{"replay": rec})
	res, got := turn(t, s.start(t, backend.StartOptions{}), "run it")
	if got != "done\n" || res.Failure != nil || res.Usage != (backend.Usage{InputTokens: 25958, OutputTokens: 128}) || res.Model != "gemini-3.8-flash-low" {
		t.Fatalf("%q %+v", got, res)
	}
}

// agy's own tools meet the session's gate: the hook denies the call, and
// the model's answer goes on. Without the gate (or past it) headless agy
// refuses the tool itself, which is reported as a failure, not an answer.
func TestOwnToolsAreDenied(t *testing.T) {
	t.Parallel()
	s := newStand(t, map[string]any{"turns": []map[string]any{{"steps": []any{
		map[string]any{"type": "agent_response", "usage": map[string]int{"input_tokens": 10, "output_tokens": 3}},
		map[string]any{"type": "tool", "tool": "run_command", "params": map[string]string{"CommandLine": "rm -rf ~"}, "output": "gone"},
		answer("I may not run commands here.\n", 20, 8),
	}}}})
	res, got := turn(t, s.start(t, backend.StartOptions{}), "clean up")
	if res.Failure != nil || got != "I may not run commands here.\n" {
		t.Fatalf("%q %+v", got, res.Failure)
	}
	denied := false
	for _, c := range s.calls() {
		if c["hook"] == "meridian-gate" && strings.Contains(c["stdout"].(string), `"decision":"deny"`) {
			denied = true
		}
	}
	if !denied {
		t.Fatalf("the gate did not deny the call: %v", s.calls())
	}
}

func TestSoftDenyIsAFailure(t *testing.T) {
	t.Parallel()
	s := newStand(t, map[string]any{"turns": []map[string]any{{"steps": []any{
		map[string]any{"type": "tool", "tool": "run_command", "params": map[string]string{"CommandLine": "ls"}},
	}}}})
	sess := s.start(t, backend.StartOptions{})
	// Replace the gate with one that allows: agy's own refusal remains.
	gate := filepath.Join(sess.(*agy.Session).Dir(), ".agents", "hooks.json")
	if err := os.WriteFile(gate, []byte(`{"open":{"PreToolUse":[{"matcher":"*","hooks":[{"type":"command","command":"echo '{\"decision\":\"allow\"}'"}]}]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	res, _ := turn(t, sess, "list")
	if res.Failure == nil || res.Failure.Code != "soft_deny" {
		t.Fatalf("%+v", res.Failure)
	}
}

// Garbage on stdout is skipped; a crash mid-stream fails the turn with
// what agy said; a stalled turn ends with its context, killing the
// process, and Close joins it even when agy ignores SIGTERM and left a
// child holding its stdout.
func TestBadOutputAndProcessEnd(t *testing.T) {
	t.Parallel()
	s := newStand(t, map[string]any{"ignore_sigterm": true, "grandchild": true, "turns": []map[string]any{
		{"match": "garbage", "garbage": true, "steps": []any{answer("fine\n", 1, 1)}},
		{"match": "crash", "crash": true, "steps": []any{answer("never\n", 1, 1)}},
		{"match": "stall", "stall": true},
	}})
	sess := s.start(t, backend.StartOptions{})
	if res, got := turn(t, sess, "garbage first"); got != "fine\n" || res.Failure != nil {
		t.Fatalf("garbage: %q %+v", got, res.Failure)
	}
	if res, _ := turn(t, sess, "crash now"); res.Failure == nil || !strings.Contains(res.Failure.Message, "agy exited") || sess.Alive() {
		t.Fatalf("crash: %+v", res.Failure)
	}
	stalled := s.start(t, backend.StartOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := stalled.Turn(ctx, text("stall here"), (&collector{}).emit); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("stall: %v", err)
	}
	sess.Close()
	stalled.Close()
	err := testkit.WaitFor(2*time.Second, func() error {
		for _, c := range s.calls() {
			for _, key := range []string{"pid", "grandchild"} {
				if pid, ok := c[key].(float64); ok && testkit.Alive(int(pid)) {
					return fmt.Errorf("%s %d outlived Close", key, int(pid))
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// /usage reads agy's limit buckets as plan windows: the share used and
// the reset.
func TestPlanUsage(t *testing.T) {
	t.Parallel()
	s := newStand(t, map[string]any{"usage": map[string]any{"groups": []any{
		map[string]any{"name": "Gemini Models", "buckets": []any{map[string]any{"id": "gemini-weekly", "name": "Weekly Limit Remaining",
			"window": "weekly", "remaining_fraction": 0.75, "reset_time": "2026-12-04T08:53:33Z"}}},
		map[string]any{"name": "Claude and GPT models", "buckets": []any{map[string]any{"id": "3p-5h", "name": "Five Hour Limit Remaining",
			"window": "5h", "remaining_fraction": 1, "reset_time": "2026-11-30T23:00:00Z"}}},
	}}})
	u, err := s.d.PlanUsage(context.Background())
	if err != nil || !u.Available || len(u.Windows) != 2 {
		t.Fatalf("%+v %v", u, err)
	}
	w := u.Windows[0]
	if w.Name != "Gemini Models: Weekly Limit Remaining" || *w.Utilization != 25 || w.ResetsAt.Format(time.RFC3339) != "2026-12-04T08:53:33Z" || *u.Windows[1].Utilization != 0 {
		t.Fatalf("windows %+v", u.Windows)
	}
	out := newStand(t, map[string]any{"signed_out": true})
	if _, err := out.d.PlanUsage(context.Background()); err == nil {
		t.Fatal("signed out: no error")
	}
}

// agy refuses a model it does not know with a lone result before init:
// a 400 from the upstream's side, not a crash.
func TestUnknownModelAtStart(t *testing.T) {
	t.Parallel()
	s := newStand(t, nil)
	res, _ := turn(t, s.start(t, backend.StartOptions{Model: "no-such-model"}), "hello")
	if res.Failure == nil || res.Failure.Status != 400 || !strings.Contains(res.Failure.Message, "not recognized as a known model") {
		t.Fatalf("%+v", res.Failure)
	}
}

// A turn past --print-timeout fails either way agy reports it: an ERROR
// result (before 1.1.28) or a partial answer passed off as a success with
// a notice on stderr (since).
func TestPrintTimeout(t *testing.T) {
	t.Parallel()
	for _, version := range []string{"1.1.18", "1.2.17"} {
		s := newStand(t, map[string]any{"version": version, "turns": []map[string]any{{"print_timeout": true, "steps": []any{
			answer("The first half", 10, 3), answer(" and the second.\n", 10, 3)}}}})
		res, _ := turn(t, s.start(t, backend.StartOptions{}), "a long job")
		if res.Failure == nil || res.Failure.Kind != backend.FailLimit || !strings.Contains(res.Failure.Message, "print timeout") {
			t.Fatalf("agy %s: %+v", version, res.Failure)
		}
	}
}
