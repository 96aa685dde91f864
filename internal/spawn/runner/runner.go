// Package runner runs spawns: it launches the detached worker process, and
// is that worker — driving the claude CLI through the shared driver,
// writing its events and stderr as they come, touching a heartbeat,
// keeping the final answer as the report, and finalizing the spawn.
package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/meridian-gw/meridian/internal/procgroup"

	"github.com/meridian-gw/meridian/internal/anthropic"
	"github.com/meridian-gw/meridian/internal/backend"
	"github.com/meridian-gw/meridian/internal/backend/claude"
	"github.com/meridian-gw/meridian/internal/procident"
	"github.com/meridian-gw/meridian/internal/spawn"
	"github.com/meridian-gw/meridian/internal/spawn/registry"
	"github.com/meridian-gw/meridian/internal/store/sqlite"
)

// Artifacts are the files of one spawn.
type Artifacts string

// Report is the report's path; the methods below name the other
// artifacts.
func (a Artifacts) Report() string    { return filepath.Join(string(a), "report.md") }
func (a Artifacts) Output() string    { return filepath.Join(string(a), "output.jsonl") }
func (a Artifacts) Stderr() string    { return filepath.Join(string(a), "stderr.log") }
func (a Artifacts) Heartbeat() string { return filepath.Join(string(a), "heartbeat") }
func (a Artifacts) WorkerLog() string { return filepath.Join(string(a), "worker.log") }

// LastActivity is the freshest modification of any artifact.
func (a Artifacts) LastActivity() time.Time {
	var last time.Time
	for _, p := range []string{a.Heartbeat(), a.Output(), a.Stderr(), a.Report(), string(a)} {
		if st, err := os.Stat(p); err == nil && st.ModTime().After(last) {
			last = st.ModTime()
		}
	}
	return last
}

// ReportComplete reports whether a report was written: reports are
// published by rename, so one that exists is whole.
func (a Artifacts) ReportComplete() bool {
	st, err := os.Stat(a.Report())
	return err == nil && st.Size() > 0
}

// ReadReport returns the report, or "" if there is none.
func (a Artifacts) ReadReport() string {
	b, _ := os.ReadFile(a.Report())
	return string(b)
}

// writeReport publishes the report atomically.
func (a Artifacts) writeReport(text string) error {
	tmp := a.Report() + ".tmp"
	if err := os.WriteFile(tmp, []byte(text), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, a.Report())
}

// Launch starts the detached worker for a recorded spawn: this binary,
// re-executed in a session of its own with stdin from /dev/null, so it
// outlives the command that created it. The worker finalizes the spawn;
// the caller records only that it launched.
func Launch(self string, args []string, env []string, row registry.Row) (pid int, err error) {
	// A spawn's folder is new: one left by an earlier run (ids restarted
	// with a lost database) is never written over.
	if err := os.MkdirAll(filepath.Dir(row.Dir), 0o700); err != nil {
		return 0, err
	}
	if err := os.Mkdir(row.Dir, 0o700); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return 0, fmt.Errorf("spawn folder %s already exists (left by an earlier run?): it is not written over", row.Dir)
		}
		return 0, err
	}
	log, err := os.OpenFile(Artifacts(row.Dir).WorkerLog(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return 0, err
	}
	defer log.Close()
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return 0, err
	}
	defer devnull.Close()
	cmd := exec.Command(self, args...)
	cmd.Env = env
	cmd.Dir = row.Cwd
	cmd.Stdin, cmd.Stdout, cmd.Stderr = devnull, log, log
	procgroup.Detach(cmd)
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	pid = cmd.Process.Pid
	// Deliberately not waited for: the worker is detached and belongs to
	// init once this process exits. It joins its own claude process.
	_ = cmd.Process.Release()
	return pid, nil
}

// Worker is the detached process that runs one spawn.
type Worker struct {
	Registry   *registry.Registry
	Row        registry.Row
	ClaudePath string
	// Env is the environment the claude CLI gets, MERIDIAN_SPAWN_ID and
	// MERIDIAN_DEPTH included.
	Env       []string
	Heartbeat time.Duration
	Log       *slog.Logger
}

// WorkerConfig is what `meridian spawn worker` runs a spawn with.
type WorkerConfig struct {
	DataDir    string // where meridian.db is
	ClaudePath string
	Env        []string
	Heartbeat  time.Duration
	Log        *slog.Logger
}

// RunWorker is the detached worker's body: it opens the data dir's store
// and runs spawn id of project once, logging how long it took.
func RunWorker(ctx context.Context, cfg WorkerConfig, project, id string) error {
	db, err := sqlite.Open(ctx, filepath.Join(cfg.DataDir, "meridian.db"))
	if err != nil {
		return err
	}
	defer db.Close()
	w := &Worker{Registry: registry.New(db), ClaudePath: cfg.ClaudePath, Env: cfg.Env, Heartbeat: cfg.Heartbeat, Log: cfg.Log}
	began := time.Now()
	err = w.RunQueued(ctx, project, id)
	cfg.Log.Info("worker done", "took", time.Since(began), "err", err)
	return err
}

// RunQueued loads spawn id of project into w and runs it. A worker runs a
// spawn once: one that is no longer queued is refused untouched.
func (w *Worker) RunQueued(ctx context.Context, project, id string) error {
	row, err := w.Registry.Get(ctx, project, id)
	if err != nil {
		return err
	}
	if row.Status != spawn.Queued {
		return fmt.Errorf("%s is %s, not queued: a worker runs a spawn once", id, row.Status)
	}
	w.Row = row
	return w.Run(ctx)
}

// Run drives the spawn to a terminal status. A cancelled ctx (SIGTERM from
// `spawn cancel`) ends the claude turn and finalizes the spawn cancelled.
func (w *Worker) Run(ctx context.Context) error {
	row := w.Row
	art := Artifacts(row.Dir)
	if err := os.MkdirAll(row.Dir, 0o700); err != nil {
		return w.fail(spawn.LaunchFailure, 1, "artifacts: "+err.Error())
	}
	pid, start := procident.Self()
	if err := w.Registry.Start(context.WithoutCancel(ctx), row.Project, row.ID, pid, start); err != nil {
		return fmt.Errorf("start %s: %w", row.ID, err)
	}
	if ctx.Err() != nil {
		// Cancelled before claude started: nothing ran.
		return w.finalize(context.WithoutCancel(ctx), registry.Final{Status: spawn.Cancelled, Origin: spawn.Cancel, ExitCode: 130})
	}
	began := time.Now()
	out, err := os.OpenFile(art.Output(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return w.fail(spawn.Runner, 1, "output log: "+err.Error())
	}
	defer out.Close()
	errLog, err := os.OpenFile(art.Stderr(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return w.fail(spawn.Runner, 1, "stderr log: "+err.Error())
	}
	defer errLog.Close()

	stopBeat := w.beat(art)
	defer stopBeat()

	prog := &progress{art: art}
	driver := claude.New(claude.Config{Path: w.ClaudePath, Env: w.Env, Tap: io.MultiWriter(out, prog), Stderr: errLog, Logger: w.Log})
	sess, err := driver.Start(context.WithoutCancel(ctx), backend.StartOptions{
		Model: row.Model, Dir: row.Cwd, Autonomous: true,
	})
	if err != nil {
		return w.fail(spawn.LaunchFailure, 1, err.Error())
	}
	if err := w.Registry.SetSession(context.WithoutCancel(ctx), row.Project, row.ID, sess.ID()); err != nil {
		w.Log.Warn("could not record the spawn's claude session", "spawn", row.ID, "err", err)
	}
	var ran string // the model that answered, as the CLI resolved it
	res, err := sess.Turn(ctx, backend.Input{Content: []json.RawMessage{anthropic.TextBlock(row.Prompt)}}, func(ev *backend.Event) error {
		if ev.Kind == backend.MessageStart && ev.Model != "" {
			ran = ev.Model
		}
		return nil
	})
	closeErr := sess.Close()
	done := context.WithoutCancel(ctx)
	if errors.Is(err, context.Canceled) || ctx.Err() != nil {
		return w.finalize(done, registry.Final{Status: spawn.Cancelled, Origin: spawn.Cancel, ExitCode: 130,
			Duration: time.Since(began), SessionID: sess.ID()})
	}
	if err != nil {
		return w.fail(spawn.Runner, 1, err.Error())
	}
	if err := w.Registry.Finalizing(done, row.Project, row.ID); err != nil {
		w.Log.Warn("could not mark the spawn finalizing", "spawn", row.ID, "err", err)
	}
	final := registry.Final{Origin: spawn.Runner, Duration: time.Since(began), CostUSD: res.CostUSD,
		InTok: res.Usage.InputTokens, OutTok: res.Usage.OutputTokens, SessionID: res.SessionID, Model: ran}
	if res.Failure != nil {
		final.Status, final.ExitCode, final.Error = spawn.Failed, 1, res.Failure.Message
		return w.finalize(done, final)
	}
	if err := art.writeReport(res.Text); err != nil {
		final.Status, final.ExitCode, final.Error = spawn.Failed, 1, "write report: "+err.Error()
		return w.finalize(done, final)
	}
	final.Status = spawn.Succeeded
	if closeErr != nil {
		w.Log.Warn("closing claude", "err", closeErr)
	}
	return w.finalize(done, final)
}

func (w *Worker) fail(origin spawn.Origin, code int, reason string) error {
	return w.finalize(context.Background(), registry.Final{Status: spawn.Failed, Origin: origin, ExitCode: code, Error: reason})
}

func (w *Worker) finalize(ctx context.Context, f registry.Final) error {
	won, err := w.Registry.Finalize(ctx, w.Row.Project, w.Row.ID, f)
	if err != nil {
		return fmt.Errorf("finalize %s: %w", w.Row.ID, err)
	}
	if !won {
		w.Log.Info("another writer finalized the spawn first", "spawn", w.Row.ID, "status", f.Status)
	}
	return nil
}

// beat touches the heartbeat until stopped.
func (w *Worker) beat(art Artifacts) (stop func()) {
	every := w.Heartbeat
	if every <= 0 {
		every = spawn.HeartbeatEvery
	}
	touch := func() {
		now := time.Now()
		if err := os.Chtimes(art.Heartbeat(), now, now); err != nil {
			_ = os.WriteFile(art.Heartbeat(), []byte(strconv.Itoa(os.Getpid())), 0o600)
		}
	}
	touch()
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				touch()
			}
		}
	}()
	return func() { close(done); <-stopped }
}
