package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/meridian-gw/meridian/internal/spawn"
	"github.com/meridian-gw/meridian/internal/spawn/lead"
	"github.com/meridian-gw/meridian/internal/spawn/registry"
	"github.com/meridian-gw/meridian/internal/spawn/runner"
	"github.com/meridian-gw/meridian/internal/spawn/statusline"
)

type createOptions struct {
	prompt, promptFile, model, cwd, desc string
	wait                                 bool
}

// create records a child, launches its detached worker and returns its id
// (or, with --wait, its report once it ends). Every check that can fail
// runs before the row is written.
func (sc *spawnContext) create(cmd *cobra.Command, c createOptions) error {
	if c.prompt != "" && c.promptFile != "" {
		return errors.New("give the prompt with -p or --prompt-file, not both")
	}
	prompt := c.prompt
	if c.promptFile != "" {
		b, err := os.ReadFile(c.promptFile)
		if err != nil {
			return fmt.Errorf("--prompt-file: %w", err)
		}
		prompt = string(b)
	}
	if strings.TrimSpace(prompt) == "" {
		return errors.New("the prompt is empty")
	}
	if c.cwd != "" {
		abs, err := filepath.Abs(c.cwd)
		if err != nil {
			return err
		}
		if st, err := os.Stat(abs); err != nil || !st.IsDir() {
			return fmt.Errorf("--cwd %s: not a directory", c.cwd)
		}
		c.cwd = abs
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find the meridian binary to run the worker: %w", err)
	}
	heartbeat := sc.env[spawn.EnvHeartbeat]
	if _, err := sc.envDuration(spawn.EnvHeartbeat, spawn.HeartbeatEvery); err != nil {
		return err
	}
	return sc.withLead(cmd, func(ctx context.Context, l *lead.Lead) error {
		row, err := l.Create(ctx, lead.Spec{Prompt: prompt, Model: c.model, Cwd: c.cwd, Desc: c.desc})
		if err != nil {
			return err
		}
		if err := l.Launch(ctx, row, lead.Worker{Self: self, DataDir: sc.dataDir, ClaudePath: sc.claudePath, Heartbeat: heartbeat, Environ: sc.environ}); err != nil {
			return err
		}
		if !c.wait {
			if sc.json {
				return printJSON(cmd, viewOf(row, ""))
			}
			fmt.Fprintln(cmd.OutOrStdout(), row.ID)
			return nil
		}
		return sc.wait(cmd, l, lead.WaitOptions{IDs: []string{row.ID}, Observe: true})
	})
}

func (sc *spawnContext) waitCommand() *cobra.Command {
	var o lead.WaitOptions
	var noObserve bool
	cmd := &cobra.Command{
		Use:   "wait [ID…]",
		Short: "Wait for spawns to finish and print their reports (no ids: the caller's running and owed children)",
		Long: `wait blocks until the given spawns finish and prints each report as it ends. With no ids it
waits for the caller's running children, and first lists up to 32 children that had already
finished and were not yet seen (headers only; the rest stay owed). While it waits, collect
leaves its children alone; on return what it printed counts as seen.
Exit status: 0 all waited runs succeeded, 1 any did not, 124 on --timeout.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.IDs, o.Observe = args, !noObserve
			return sc.withLead(cmd, func(ctx context.Context, l *lead.Lead) error {
				return sc.wait(cmd, l, o)
			})
		},
	}
	cmd.Flags().DurationVar(&o.Timeout, "timeout", 0, "give up after this long (exit 124)")
	cmd.Flags().BoolVar(&o.FailFast, "fail-fast", false, "return as soon as a waited run fails")
	cmd.Flags().BoolVar(&noObserve, "no-observe", false, "take no lease and count nothing as seen")
	return cmd
}

func (sc *spawnContext) wait(cmd *cobra.Command, l *lead.Lead, o lead.WaitOptions) error {
	if o.Timeout < 0 {
		return errors.New("--timeout must not be negative")
	}
	out := cmd.OutOrStdout()
	terminal, width := terminalOf(out)
	live := statusline.New(out, terminal, width)
	defer live.Clear()
	if !sc.json {
		// One line per running child, under the reports as they come.
		o.Running = func(rows []registry.Row) {
			children := make([]statusline.Child, len(rows))
			for i, r := range rows {
				c := statusline.Child{ID: r.ID, Desc: r.Desc}
				if !r.Started.IsZero() {
					c.Elapsed = time.Since(r.Started)
				}
				if p, ok := runner.Artifacts(r.Dir).ReadProgress(); ok {
					c.Tokens, c.LastTool, c.Tools = p.InTok+p.OutTok, p.LastTool, p.Tools
				}
				children[i] = c
			}
			live.Show(children)
		}
		// Text follows the runs as they end; owed children come first.
		o.Finished = func(f lead.Finished) {
			live.Clear()
			fmt.Fprint(out, spawn.Header(f.Row.Spawn, l.Cwd))
			if f.Report != "" {
				fmt.Fprintf(out, "\n%s\n", strings.TrimRight(f.Report, "\n"))
			}
			fmt.Fprintln(out)
		}
	}
	if !sc.json {
		o.Began = func(owed []registry.Row) {
			if len(owed) == 0 {
				return
			}
			spawns := make([]spawn.Spawn, len(owed))
			for i, r := range owed {
				spawns[i] = r.Spawn
			}
			fmt.Fprintln(out, spawn.DeliveryText(spawns, l.Cwd))
		}
	}
	res, err := l.Wait(cmd.Context(), o)
	live.Clear()
	if err != nil {
		return err
	}
	if sc.json {
		if err := printJSON(cmd, waitView(res)); err != nil {
			return err
		}
	} else {
		if len(res.Runs) == 0 && len(res.Owed) == 0 && len(res.Pending) == 0 {
			fmt.Fprintln(out, "nothing to wait for: no child is running or unseen")
		}
		for _, p := range res.Pending {
			fmt.Fprintf(out, "%s still %s\n", p.ID, p.Status)
		}
		if res.TimedOut {
			fmt.Fprintln(out, "timed out")
		}
	}
	if code := res.ExitCode(); code != 0 {
		return exitCode(code)
	}
	return nil
}

func (sc *spawnContext) cancelCommand() *cobra.Command {
	var noObserve bool
	cmd := &cobra.Command{
		Use:   "cancel ID…",
		Short: "Cancel spawns; a cancel reported as cancelled counts as seen",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return sc.withLead(cmd, func(ctx context.Context, l *lead.Lead) error {
				outcomes, err := l.Cancel(ctx, args, !noObserve)
				if err != nil {
					return err
				}
				if sc.json {
					views := make([]cancelView, len(outcomes))
					for i, o := range outcomes {
						views[i] = cancelView{spawnView: viewOf(o.Row, ""), AlreadyEnded: o.Ended}
					}
					return printJSON(cmd, map[string]any{"spawns": views})
				}
				out := cmd.OutOrStdout()
				for _, o := range outcomes {
					r := o.Row
					switch {
					case o.Ended:
						fmt.Fprintf(out, "%s was already %s; nothing to cancel\n", r.ID, r.Status)
					case r.Status.Active():
						fmt.Fprintf(out, "%s is still %s; its result will be delivered when it ends\n", r.ID, r.Status)
					default:
						fmt.Fprintf(out, "%s %s\n", r.ID, r.Status)
					}
				}
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&noObserve, "no-observe", false, "do not count a cancelled result as seen")
	return cmd
}

// workerCommand is the detached worker that runs one spawn; create starts
// it, people do not.
func (sc *spawnContext) workerCommand() *cobra.Command {
	var project, id string
	cmd := &cobra.Command{
		Use:    "worker --project DIR --id ID",
		Short:  "Run one spawn (started by meridian spawn; not for direct use)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			heartbeat, err := sc.envDuration(spawn.EnvHeartbeat, spawn.HeartbeatEvery)
			if err != nil {
				return err
			}
			// The worker's stderr is its worker.log: say what happened.
			log := sc.logger(slog.LevelInfo).With("spawn", id)
			return runner.RunWorker(ctx, runner.WorkerConfig{DataDir: sc.dataDir, ClaudePath: sc.claudePath, Env: sc.environ,
				Heartbeat: heartbeat, Log: log}, project, id)
		},
	}
	cmd.Flags().StringVar(&project, "project", "", "the spawn's project")
	cmd.Flags().StringVar(&id, "id", "", "the spawn's id")
	return cmd
}
