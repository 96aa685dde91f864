package agy_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/backend"
	"github.com/meridian-gw/meridian/internal/backend/agy"
	"github.com/meridian-gw/meridian/internal/backend/subproc"
	"github.com/meridian-gw/meridian/internal/procgroup"
	"github.com/meridian-gw/meridian/internal/testkit"
)

// A stderr line longer than the reader keeps (1 MiB) does not end the
// reading: agy, which then writes more stderr than a pipe holds, is never
// left blocked on it, and its turn completes.
func TestALongStderrLineDoesNotStallTheTurn(t *testing.T) {
	t.Parallel()
	s := newStand(t, map[string]any{"turns": []map[string]any{
		{"steps": []any{answer("Answered after a long stderr line.\n", 10, 2)}, "long_stderr": 2 << 20},
	}})
	sess := s.start(t, backend.StartOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var c collector
	res, err := sess.Turn(ctx, text("talk"), c.emit)
	if err != nil || res.Failure != nil || c.text.String() != "Answered after a long stderr line.\n" {
		t.Fatalf("turn after a long stderr line: %v %+v %q", err, res, c.text.String())
	}
}

// A stdout line over the bound is dropped, never held whole: a 200 MiB
// line costs at most the bound in memory, and the turn after it is read.
func TestAStdoutLineOverTheBoundIsDropped(t *testing.T) {
	s := newStand(t, map[string]any{"turns": []map[string]any{
		{"steps": []any{answer("After the long line.\n", 10, 2)}, "long_line": 200 << 20},
	}})
	sess := s.start(t, backend.StartOptions{})
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	res, got := turn(t, sess, "talk")
	runtime.ReadMemStats(&after)
	if res.Failure != nil || got != "After the long line.\n" {
		t.Fatalf("turn after a long stdout line: %+v %q", res, got)
	}
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("a 200 MiB line cost %d MiB of allocations (bound %d MiB)", allocated>>20, subproc.DefaultMaxLine>>20)
	if allocated > 2*subproc.DefaultMaxLine+(16<<20) {
		t.Fatalf("reading a 200 MiB line allocated %d MiB: it was held, not bounded", allocated>>20)
	}
}

// A turn whose write to agy's stdin cannot go through (agy stopped
// reading) ends with its context, and Close joins the process.
func TestStdinWriteEndsWithTheContext(t *testing.T) {
	t.Parallel()
	s := newStand(t, map[string]any{"turns": []map[string]any{{"steps": []any{answer("ok\n", 1, 1)}}}})
	sess := s.start(t, backend.StartOptions{})
	turn(t, sess, "first")
	// SIGSTOP: agy reads nothing more, so a prompt larger than the pipe
	// blocks its write.
	stopped := sess.(interface{ Pid() int }).Pid()
	if err := procgroup.Signal(stopped, procgroup.Freeze); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = procgroup.Signal(stopped, procgroup.Thaw) }()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := sess.Turn(ctx, text(strings.Repeat("x", 4<<20)), func(*backend.Event) error { return nil })
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("the blocked turn reported success")
		}
	case <-time.After(testkit.Scale(10 * time.Second)):
		t.Fatal("a write to a stopped agy did not end with its context")
	}
	closed := make(chan struct{})
	go func() { sess.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(testkit.Scale(10 * time.Second)):
		t.Fatal("Close did not join a stopped agy")
	}
}

// The readiness check a session start runs is owned by the driver: a
// caller that gives up leaves it running for the next caller, and the
// driver's Close ends it (and the agy it runs) and joins it.
func TestCloseJoinsTheReadinessCheck(t *testing.T) {
	t.Parallel()
	slow := filepath.Join(t.TempDir(), "agy")
	if err := os.WriteFile(slow, []byte("#!/bin/sh\nexec sleep 60\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	d := agy.New(agy.Config{Path: slow, SessionRoot: t.TempDir()})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := d.Start(ctx, backend.StartOptions{Dir: t.TempDir()}); err == nil {
		t.Fatal("a start whose readiness check cannot finish succeeded")
	}
	closed := make(chan struct{})
	go func() { d.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(testkit.Scale(10 * time.Second)):
		t.Fatal("Close did not end the readiness check")
	}
}

// A passed readiness check is not trusted by the next session start: agy
// signed out since is noticed there, with a 401. Starts that arrive
// together share one check.
func TestSignOutIsNoticedAtTheNextStart(t *testing.T) {
	t.Parallel()
	path, env, calls := testkit.FakeAgy(t, map[string]any{})
	d := agy.New(agy.Config{Path: path, Env: env, SessionRoot: t.TempDir()})
	defer d.Close()
	dir := t.TempDir()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			s, err := d.Start(context.Background(), backend.StartOptions{Dir: dir})
			if err != nil {
				t.Errorf("a start while signed in: %v", err)
				return
			}
			s.Close()
		})
	}
	wg.Wait()
	checks := func() int {
		n := 0
		for _, c := range calls() {
			if argv, _ := c["argv"].([]any); len(argv) == 1 && argv[0] == "models" {
				n++
			}
		}
		return n
	}
	if n := checks(); n != 1 {
		t.Fatalf("four starts together ran %d login checks, want one shared", n)
	}
	var scenarioFile string
	for _, kv := range env {
		if f, ok := strings.CutPrefix(kv, "FAKE_AGY_SCENARIO="); ok {
			scenarioFile = f
		}
	}
	if err := os.WriteFile(scenarioFile, []byte(`{"signed_out":true}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := d.Start(context.Background(), backend.StartOptions{Dir: dir})
	var f *backend.Failure
	if !errors.As(err, &f) || f.Status != 401 || f.RetryDelay <= 0 {
		t.Fatalf("the start after a sign-out: %v, want a 401 with a wait", err)
	}
	if n := checks(); n != 2 {
		t.Fatalf("%d login checks, want the second start's own", n)
	}
}

// An AGY_ERROR line agy writes while the driver's write of the prompt is
// still blocked (a prompt larger than the pipe) belongs to that turn: it
// explains the failure the result leaves vague.
func TestAnAGYErrorReadBeforeThePromptIsWrittenCounts(t *testing.T) {
	t.Parallel()
	s := newStand(t, map[string]any{
		"early_stderr": `AGY_ERROR: {"code":429,"status":"RESOURCE_EXHAUSTED","message":"Resource has been exhausted.","retryDelay":"17s"}`,
		"turns":        []map[string]any{{"status": "ERROR", "error": "agent executor error: generating and executing"}},
	})
	sess := s.start(t, backend.StartOptions{})
	res, _ := turn(t, sess, strings.Repeat("x", 1<<20))
	if f := res.Failure; f == nil || f.Status != 429 || !strings.Contains(f.Message, "Resource has been exhausted") {
		t.Fatalf("the early AGY_ERROR was lost: %+v", f)
	}
}

// A notice agy's stderr brings after a turn's result is not the next
// turn's: the next turn succeeds.
func TestALateNoticeDoesNotFailTheNextTurn(t *testing.T) {
	t.Parallel()
	path, env, _ := testkit.FakeAgy(t, map[string]any{"turns": []map[string]any{
		{"match": "first", "steps": []any{answer("one\n", 1, 1)}, "stderr_after": `jetski: no output produced — a tool required the "command" permission`},
		{"match": "second", "steps": []any{answer("two\n", 1, 1)}},
	}})
	var log testkit.Log
	d := agy.New(agy.Config{Path: path, Env: env, SessionRoot: t.TempDir(), ExitGrace: 500 * time.Millisecond, KillGrace: 500 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	s := &stand{d: d, dir: t.TempDir()}
	sess := s.start(t, backend.StartOptions{})
	// The notice comes 200 ms after the first turn's result; only the
	// next turn's outcome is asserted.
	turn(t, sess, "first")
	if err := testkit.WaitFor(10*time.Second, func() error {
		if !strings.Contains(log.String(), "jetski: no output produced") {
			return errors.New("the driver has not read the notice")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if res, got := turn(t, sess, "second"); res.Failure != nil || got != "two\n" {
		t.Fatalf("second turn after a late notice: %+v %q", res.Failure, got)
	}
}

// A readiness check that times out is asked once more: a first `agy
// models` that hangs costs one retry and the start succeeds; a second
// that hangs too is reported as agy unavailable, after two attempts.
func TestATimedOutProbeIsRetriedOnce(t *testing.T) {
	t.Parallel()
	for _, stall := range []int{1, 2} {
		path, env, calls := testkit.FakeAgy(t, map[string]any{"models_stall": stall})
		d := agy.New(agy.Config{Path: path, Env: env, SessionRoot: t.TempDir(), ProbeTimeout: 2 * time.Second})
		s, err := d.Start(context.Background(), backend.StartOptions{Dir: t.TempDir()})
		switch {
		case stall == 1 && err != nil:
			t.Fatalf("a start whose first check timed out: %v", err)
		case stall == 1:
			s.Close()
		case !errors.Is(err, backend.ErrUnavailable) || !strings.Contains(err.Error(), "asked 2 times"):
			t.Fatalf("a start whose checks both timed out: %v", err)
		}
		d.Close()
		n := 0
		for _, c := range calls() {
			if argv, _ := c["argv"].([]any); len(argv) == 1 && argv[0] == "models" {
				n++
			}
		}
		if n != 2 {
			t.Fatalf("stall %d: %d login checks, want 2", stall, n)
		}
	}
}
