package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/meridian-gw/meridian/internal/config"
	"github.com/meridian-gw/meridian/internal/launch"
	"github.com/meridian-gw/meridian/internal/spawn"
	"github.com/meridian-gw/meridian/internal/spawn/proc"
	"github.com/meridian-gw/meridian/mods"
)

func newClaudeCommand(env map[string]string, environ []string) *cobra.Command {
	return &cobra.Command{
		Use:   "claude [claude arguments…]",
		Short: "Run claude as a lead whose finished spawns are delivered to it",
		Long: `claude runs the claude CLI with every argument passed through, as a lead: the session is
recorded as a primary spawn and MERIDIAN_SPAWN_ID names it, so the children it starts with
meridian spawn are its own. Interactive sessions load the meridian-spawn-watch mod, which
hands the session its finished children as a new turn when it sits idle; set
harness.claude.spawn_watch.enabled = false in the config file to leave it out. Print runs
(-p) never load it. Subcommands, --help and --version run claude unchanged.

The config file is MERIDIAN_CONFIG, else meridian/config.toml in XDG_CONFIG_HOME or ~/.config.`,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := prepareClaude(cmd.Context(), env, environ, args, isTerminal(os.Stdout))
			if err != nil {
				return err
			}
			return l.exec(cmd.Context())
		},
	}
}

// claudeLaunch is the exec that meridian claude ends in.
type claudeLaunch struct {
	path    string
	argv    []string
	environ []string
	// The primary spawn recorded for the session, if any: finalized as
	// failed when the exec does not happen.
	sc *spawnContext
	id string
}

// prepareClaude does everything before the exec: classify the launch,
// install the mod, record the primary spawn, build argv and environment.
// Every check that can fail runs before the spawn is recorded.
func prepareClaude(ctx context.Context, env map[string]string, environ, args []string, stdoutTerminal bool) (*claudeLaunch, error) {
	name := envOr(env, spawn.EnvClaudePath, "claude")
	path, err := exec.LookPath(name)
	if err != nil {
		return nil, fmt.Errorf("claude CLI %q not found (set MERIDIAN_CLAUDE_PATH): %w", name, err)
	}
	mode := launch.Classify(args, stdoutTerminal)
	if mode == launch.Other {
		return &claudeLaunch{path: path, argv: append([]string{path}, args...), environ: environ}, nil
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find the meridian binary: %w", err)
	}
	var pluginDirs []string
	dataDir := envOr(env, spawn.EnvDataDir, defaultDataDir(env))
	if mode == launch.Interactive {
		cfg, err := config.Load(config.Path(env))
		if err != nil {
			return nil, err
		}
		if cfg.Harness.Claude.SpawnWatch.Enabled {
			dir, err := launch.Install(filepath.Join(dataDir, "mods"), mods.SpawnWatch())
			if err != nil {
				return nil, err
			}
			pluginDirs = append(pluginDirs, dir)
		}
	}
	none := ""
	sc := &spawnContext{env: env, environ: environ, chdir: &none, dataDir: dataDir, claudePath: name}
	l, closeDB, err := sc.open(ctx)
	if err != nil {
		return nil, err
	}
	defer closeDB() // before the exec: the session must not hold the database
	// exec keeps the pid and the start time: the row's runner is the
	// claude session itself, and the reaper sees it end.
	pid, start := proc.Self()
	row, err := l.StartPrimary(ctx, "claude "+mode.String()+" session", pid, start)
	if err != nil {
		return nil, fmt.Errorf("record the session: %w", err)
	}
	set := spawn.ChildEnv(row.ID, row.Depth, l.Project, dataDir)
	// The session runs meridian by name (the mod, the model's own spawn
	// commands): it must find this binary.
	if found, err := exec.LookPath("meridian"); err != nil || !sameFile(found, self) {
		set["PATH"] = filepath.Dir(self) + string(filepath.ListSeparator) + env["PATH"]
	}
	return &claudeLaunch{
		path: path, argv: append([]string{path}, launch.Args(args, mode, pluginDirs...)...),
		environ: spawn.Environ(environ, set), sc: sc, id: row.ID,
	}, nil
}

func (c *claudeLaunch) exec(ctx context.Context) error {
	err := fmt.Errorf("exec %s: %w", c.path, syscall.Exec(c.path, c.argv, c.environ))
	if c.sc != nil {
		l, closeDB, oerr := c.sc.open(ctx)
		if oerr != nil {
			return errors.Join(err, oerr)
		}
		defer closeDB()
		return errors.Join(err, l.LaunchFailed(ctx, c.id, err))
	}
	return err
}

func sameFile(a, b string) bool {
	sa, err := os.Stat(a)
	if err != nil {
		return false
	}
	sb, err := os.Stat(b)
	return err == nil && os.SameFile(sa, sb)
}

func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
