package lead

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"time"

	"github.com/meridian-gw/meridian/internal/procident"
	"github.com/meridian-gw/meridian/internal/spawn"
	"github.com/meridian-gw/meridian/internal/spawn/registry"
	"github.com/meridian-gw/meridian/internal/spawn/runner"
	"github.com/meridian-gw/meridian/internal/store/sqlite"
)

// Open is FromEnv with the registry in dataDir attached; close releases
// the database.
func Open(ctx context.Context, env map[string]string, cwd, chdir, dataDir string, log *slog.Logger) (l *Lead, close func(), err error) {
	if l, err = FromEnv(env, cwd, chdir, dataDir); err != nil {
		return nil, nil, err
	}
	l.Log = log
	db, err := sqlite.Open(ctx, filepath.Join(dataDir, "meridian.db"))
	if err != nil {
		return nil, nil, err
	}
	l.Registry = registry.New(db)
	return l, func() { _ = db.Close() }, nil
}

// FromEnv is the caller as a lead, as its environment says (the contract
// in package spawn): its spawn id and depth, its project (chdir, if set,
// names it and makes the lead read-only), and the limits it works under.
// The registry is the caller's to attach.
func FromEnv(env map[string]string, cwd, chdir, dataDir string) (*Lead, error) {
	l := &Lead{Cwd: cwd, ID: env[spawn.EnvID], SpawnsDir: filepath.Join(dataDir, "spawns")}
	var err error
	switch {
	case chdir != "":
		l.ReadOnly = true
		if l.Cwd, err = filepath.Abs(chdir); err != nil {
			return nil, err
		}
		l.Project, err = FindProject(chdir)
	case env[spawn.EnvProject] != "":
		l.Project = env[spawn.EnvProject]
	default:
		l.Project, err = FindProject(cwd)
	}
	if err != nil {
		return nil, err
	}
	if l.ID != "" {
		if _, err := spawn.ParseID(l.ID); err != nil {
			return nil, fmt.Errorf("%s: %w", spawn.EnvID, err)
		}
	}
	if l.Depth, err = EnvInt(env, spawn.EnvDepth, 0); err != nil {
		return nil, err
	}
	if l.MaxDepth, err = EnvInt(env, spawn.EnvMaxDepth, DefaultMaxDepth); err != nil {
		return nil, err
	}
	if l.ReapWindow, err = EnvDuration(env, spawn.EnvReapWindow, spawn.DefaultReapWindow); err != nil {
		return nil, err
	}
	if l.ReapGrace, err = EnvDuration(env, spawn.EnvReapGrace, spawn.DefaultReapGrace); err != nil {
		return nil, err
	}
	if l.Retention, err = EnvDuration(env, spawn.EnvRetention, spawn.DefaultRetention); err != nil {
		return nil, err
	}
	return l, nil
}

// EnvInt reads a non-negative integer setting; absent is def.
func EnvInt(env map[string]string, key string, def int) (int, error) {
	v := env[key]
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s=%q: not a non-negative integer", key, v)
	}
	return n, nil
}

// EnvDuration reads a positive duration setting; absent is def.
func EnvDuration(env map[string]string, key string, def time.Duration) (time.Duration, error) {
	v := env[key]
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s=%q: not a positive duration (e.g. 30s)", key, v)
	}
	return d, nil
}

// Worker is how a spawn's detached worker is started: this binary, the
// data dir and claude CLI it uses, its heartbeat (empty: the default),
// and the environment it inherits.
type Worker struct {
	Self, DataDir, ClaudePath, Heartbeat string
	Environ                              []string
}

// Launch starts the detached worker of a recorded spawn. The worker's
// environment names the spawn (ChildEnv), so what it runs knows whose
// child it is. A launch that fails finalizes the spawn failed; the
// worker's pid is recorded at once, so the reaper and cancel find a worker
// that dies before it records itself.
func (l *Lead) Launch(ctx context.Context, row registry.Row, w Worker) error {
	args := []string{"spawn", "worker", "--data-dir", w.DataDir, "--claude-path", w.ClaudePath, "--project", l.Project, "--id", row.ID}
	set := spawn.ChildEnv(row.ID, row.Depth, l.Project, w.DataDir)
	set[spawn.EnvClaudePath], set[spawn.EnvHeartbeat] = w.ClaudePath, w.Heartbeat
	pid, err := runner.Launch(w.Self, args, spawn.Environ(w.Environ, set), row)
	if err != nil {
		if ferr := l.LaunchFailed(context.WithoutCancel(ctx), row.ID, err); ferr != nil {
			return fmt.Errorf("launch %s: %w (and recording it failed: %v)", row.ID, err, ferr)
		}
		return fmt.Errorf("launch %s: %w", row.ID, err)
	}
	if start, err := procident.StartTime(pid); err == nil {
		if err := l.Registry.SetRunner(ctx, l.Project, row.ID, pid, start); err != nil {
			l.log().Warn("could not record the worker's process", "spawn", row.ID, "err", err)
		}
	}
	return nil
}
