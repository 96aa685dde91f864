package launch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/meridian-gw/meridian/internal/config"
	"github.com/meridian-gw/meridian/internal/procident"
	"github.com/meridian-gw/meridian/internal/spawn"
	"github.com/meridian-gw/meridian/internal/spawn/lead"
	"github.com/meridian-gw/meridian/mods"
)

// Options is what a meridian claude launch is made from.
type Options struct {
	Args     []string          // the claude arguments, passed through
	Terminal bool              // stdout is a terminal
	Env      map[string]string // the caller's environment, as a map
	Environ  []string          // and as the session inherits it
	Claude   string            // the claude CLI, a path or a name on PATH
	DataDir  string
	Config   string // the config file, which may be absent
	Self     string // this binary
	Cwd      string
	Log      *slog.Logger
}

// Session is the exec that meridian claude ends in: the CLI, its argv and
// environment, and the primary spawn recorded for it ("" when the
// command starts no session).
type Session struct {
	Path    string
	Argv    []string
	Environ []string
	Primary string
	o       Options
}

// Prepare does everything before the exec: classify the launch, install
// the mod, record the primary spawn, build argv and environment. Every
// check that can fail runs before the spawn is recorded.
func Prepare(ctx context.Context, o Options) (*Session, error) {
	path, err := exec.LookPath(o.Claude)
	if err != nil {
		return nil, fmt.Errorf("claude CLI %q not found (set %s): %w", o.Claude, spawn.EnvClaudePath, err)
	}
	mode := Classify(o.Args, o.Terminal)
	if mode == Other {
		return &Session{Path: path, Argv: append([]string{path}, o.Args...), Environ: o.Environ, o: o}, nil
	}
	var pluginDirs []string
	if mode == Interactive {
		cfg, err := config.Load(o.Config)
		if err != nil {
			return nil, err
		}
		if cfg.Harness.Claude.SpawnWatch.Enabled {
			dir, err := Install(filepath.Join(o.DataDir, "mods"), mods.SpawnWatch())
			if err != nil {
				return nil, err
			}
			pluginDirs = append(pluginDirs, dir)
		}
	}
	l, closeDB, err := lead.Open(ctx, o.Env, o.Cwd, "", o.DataDir, o.Log)
	if err != nil {
		return nil, err
	}
	defer closeDB() // before the exec: the session must not hold the database
	// exec keeps the pid and the start time: the row's runner is the
	// claude session itself, and the reaper sees it end.
	pid, start := procident.Self()
	row, err := l.StartPrimary(ctx, "claude "+mode.String()+" session", pid, start)
	if err != nil {
		return nil, fmt.Errorf("record the session: %w", err)
	}
	set := spawn.ChildEnv(row.ID, row.Depth, l.Project, o.DataDir)
	// The session runs meridian by name (the mod, the model's own spawn
	// commands): it must find this binary.
	if found, err := exec.LookPath("meridian"); err != nil || !sameFile(found, o.Self) {
		set["PATH"] = filepath.Dir(o.Self) + string(filepath.ListSeparator) + o.Env["PATH"]
	}
	return &Session{
		Path: path, Argv: append([]string{path}, Args(o.Args, mode, pluginDirs...)...),
		Environ: spawn.Environ(o.Environ, set), Primary: row.ID, o: o,
	}, nil
}

// Exec replaces this process with the session. It returns only when the
// exec fails, and then finalizes the primary spawn as failed.
func (s *Session) Exec(ctx context.Context) error {
	err := fmt.Errorf("exec %s: %w", s.Path, syscall.Exec(s.Path, s.Argv, s.Environ))
	if s.Primary == "" {
		return err
	}
	l, closeDB, oerr := lead.Open(ctx, s.o.Env, s.o.Cwd, "", s.o.DataDir, s.o.Log)
	if oerr != nil {
		return errors.Join(err, oerr)
	}
	defer closeDB()
	return errors.Join(err, l.LaunchFailed(ctx, s.Primary, err))
}

func sameFile(a, b string) bool {
	sa, err := os.Stat(a)
	if err != nil {
		return false
	}
	sb, err := os.Stat(b)
	return err == nil && os.SameFile(sa, sb)
}
