package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/meridian-gw/meridian/internal/spawn"
	"github.com/meridian-gw/meridian/internal/spawn/lead"
	"github.com/meridian-gw/meridian/internal/spawn/registry"
)

// spawnContext is what every spawn command shares: where state lives,
// which claude runs children, how to print, and who the caller is (read
// from its environment).
type spawnContext struct {
	env        map[string]string
	environ    []string
	chdir      *string // the root's -C
	dataDir    string
	claudePath string
	json       bool
}

// exitCode ends the process with a status and no further message: the
// command has already said what happened.
type exitCode int

func (e exitCode) Error() string { return "exit status " + strconv.Itoa(int(e)) }

func newSpawnCommand(env map[string]string, environ []string, chdir *string) *cobra.Command {
	sc := &spawnContext{env: env, environ: environ, chdir: chdir}
	var c createOptions
	cmd := &cobra.Command{
		Use:   "spawn -p PROMPT [flags] | spawn COMMAND",
		Short: "Run background child agents and collect their results",
		Long: `spawn runs a background claude agent on a prompt and returns its id (p1, p2, …) at once.
The caller is the spawn's lead: a process with MERIDIAN_SPAWN_ID set (another spawn, or a
session started by meridian claude), else the project's root lead. A lead learns which of
its children finished through collect and ack, wait, or any command that shows a finished
child's report; run with -C DIR, commands only look and never record anything as seen.`,
		Example: `  meridian spawn -p "write the tests for parser.go" --desc tests   # prints p1 at once
  meridian spawn list                  # your children: running, done, owed to you
  meridian spawn wait                  # block until they finish, print their reports
  meridian spawn collect; meridian spawn ack p1   # what the spawn-watch mod does
  meridian -C ../other spawn status    # look at another project, read-only`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if c.prompt == "" && c.promptFile == "" {
				return errors.New("spawn needs a prompt: -p PROMPT or --prompt-file FILE (or a command; see meridian spawn --help)")
			}
			return sc.create(cmd, c)
		},
	}
	pf := cmd.PersistentFlags()
	pf.StringVarP(chdir, "directory", "C", "", "act on the project at `DIR`, read-only: commands then never record anything as seen (also before the command: meridian -C DIR spawn …)")
	pf.StringVar(&sc.dataDir, "data-dir", envOr(env, spawn.EnvDataDir, defaultDataDir(env)), "where Meridian keeps its state (MERIDIAN_DATA_DIR)")
	pf.StringVar(&sc.claudePath, "claude-path", envOr(env, spawn.EnvClaudePath, "claude"), "the claude CLI binary, a path or a name on PATH (MERIDIAN_CLAUDE_PATH)")
	pf.BoolVar(&sc.json, "json", false, "print JSON instead of text")
	f := cmd.Flags()
	f.StringVarP(&c.prompt, "prompt", "p", "", "the task for the child agent")
	f.StringVar(&c.promptFile, "prompt-file", "", "read the task from a file")
	f.StringVarP(&c.model, "model", "m", "", "the model the child runs (the CLI's default if unset)")
	f.StringVar(&c.cwd, "cwd", "", "the child's working directory (default: the current one)")
	f.StringVar(&c.desc, "desc", "", "a short description shown in listings and deliveries")
	f.BoolVar(&c.wait, "wait", false, "block until the child finishes and print its report")

	cmd.AddCommand(sc.listCommand(), sc.showCommand(), sc.statusCommand(), sc.reportCommand(), sc.logCommand(),
		sc.waitCommand(), sc.cancelCommand(), sc.collectCommand(), sc.ackCommand(), sc.clearCommand(), sc.workerCommand())
	return cmd
}

func envOr(env map[string]string, key, def string) string {
	if v := env[key]; v != "" {
		return v
	}
	return def
}

// open builds the caller's lead: its project, identity and depth, and the
// registry in the data dir. close releases the database.
func (sc *spawnContext) open(ctx context.Context) (l *lead.Lead, close func(), err error) {
	cwd, err := os.Getwd()
	if err != nil {
		return nil, nil, fmt.Errorf("working directory: %w", err)
	}
	return lead.Open(ctx, sc.env, cwd, *sc.chdir, sc.dataDir, sc.logger(slog.LevelWarn))
}

func (sc *spawnContext) envDuration(key string, def time.Duration) (time.Duration, error) {
	return lead.EnvDuration(sc.env, key, def)
}

// logger writes diagnostics to stderr, at level unless MERIDIAN_LOG_LEVEL
// says otherwise; stdout is for results.
func (sc *spawnContext) logger(level slog.Level) *slog.Logger { return spawnLogger(sc.env, level) }

func spawnLogger(env map[string]string, level slog.Level) *slog.Logger {
	if v := env["MERIDIAN_LOG_LEVEL"]; v != "" {
		_ = level.UnmarshalText([]byte(v))
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

// withLead runs fn with the caller's lead.
func (sc *spawnContext) withLead(cmd *cobra.Command, fn func(context.Context, *lead.Lead) error) error {
	l, closeDB, err := sc.open(cmd.Context())
	if err != nil {
		return err
	}
	defer closeDB()
	return fn(cmd.Context(), l)
}

func (sc *spawnContext) listCommand() *cobra.Command {
	var status string
	var all bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "One line per child (every spawn of the project with --all); never marks anything seen",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return sc.withLead(cmd, func(ctx context.Context, l *lead.Lead) error {
				rows, err := l.List(ctx, spawn.Status(status), all)
				if err != nil {
					return err
				}
				seen, err := l.Seen(ctx)
				if err != nil {
					return err
				}
				return sc.printRows(cmd, rows, nil, seen)
			})
		},
	}
	cmd.Flags().StringVar(&status, "status", "", "only spawns with this status")
	cmd.Flags().BoolVar(&all, "all", false, "every spawn of the project, not only the caller's children")
	return cmd
}

func (sc *spawnContext) showCommand() *cobra.Command {
	return sc.reportReader("show ID", "A spawn's header and report; a finished child's report shown counts as seen",
		func(cmd *cobra.Command, l *lead.Lead, row registry.Row, report string) error {
			return sc.printShown(cmd, l, row, report)
		})
}

// reportReader is a command that shows one spawn's report, which counts
// as seeing it unless --no-observe.
func (sc *spawnContext) reportReader(use, short string, print func(*cobra.Command, *lead.Lead, registry.Row, string) error) *cobra.Command {
	var noObserve bool
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return sc.withLead(cmd, func(ctx context.Context, l *lead.Lead) error {
				row, report, err := l.Show(ctx, args[0], !noObserve)
				if err != nil {
					return err
				}
				return print(cmd, l, row, report)
			})
		},
	}
	cmd.Flags().BoolVar(&noObserve, "no-observe", false, "do not count the report as seen")
	return cmd
}

func (sc *spawnContext) statusCommand() *cobra.Command {
	var full, noObserve bool
	cmd := &cobra.Command{
		Use:   "status [ID…]",
		Short: "Summaries of spawns (the caller's children by default); --full adds reports and counts them as seen",
		RunE: func(cmd *cobra.Command, args []string) error {
			return sc.withLead(cmd, func(ctx context.Context, l *lead.Lead) error {
				rows, reports, err := l.Status(ctx, args, full, !noObserve)
				if err != nil {
					return err
				}
				return sc.printRows(cmd, rows, reports, nil) // reports are empty without --full
			})
		},
	}
	cmd.Flags().BoolVar(&full, "full", false, "include report bodies")
	cmd.Flags().BoolVar(&noObserve, "no-observe", false, "with --full, do not count reports as seen")
	return cmd
}

func (sc *spawnContext) reportCommand() *cobra.Command {
	show := sc.reportReader("show ID", "A spawn's report body; a finished child's report shown counts as seen",
		func(cmd *cobra.Command, _ *lead.Lead, row registry.Row, report string) error {
			if sc.json {
				return printJSON(cmd, map[string]any{"id": row.ID, "status": row.Status, "report": report})
			}
			return printReport(cmd, row, report)
		})
	search := &cobra.Command{
		Use:   "search QUERY",
		Short: "Report lines matching QUERY across the project's spawns; never marks anything seen",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return sc.withLead(cmd, func(ctx context.Context, l *lead.Lead) error {
				matches, err := l.Search(ctx, strings.Join(args, " "))
				if err != nil {
					return err
				}
				if sc.json {
					if matches == nil {
						matches = []lead.Match{}
					}
					return printJSON(cmd, map[string]any{"matches": matches})
				}
				for _, m := range matches {
					fmt.Fprintf(cmd.OutOrStdout(), "%s: %s\n", m.ID, m.Line)
				}
				return nil
			})
		},
	}
	cmd := &cobra.Command{Use: "report", Short: "Read or search spawn reports"}
	cmd.AddCommand(show, search)
	return cmd
}

func (sc *spawnContext) logCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "log ID",
		Short: "The spawn's event log (the CLI's events; raw lines with --json); never marks anything seen",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return sc.withLead(cmd, func(ctx context.Context, l *lead.Lead) error {
				row, err := l.Get(ctx, args[0])
				if err != nil {
					return err
				}
				return printLog(cmd, row, sc.json)
			})
		},
	}
}

func (sc *spawnContext) ackCommand() *cobra.Command {
	var receipt string
	cmd := &cobra.Command{
		Use:   "ack ID…",
		Short: "Record that the caller has seen these spawns' results (idempotent)",
		Long: `ack records that the caller has seen these spawns' results, so that collect and wait
never deliver them again. With --receipt, the ack is a client's delivery receipt: the
client admitted a delivery (the Pi extension acks when Pi starts the message that
carries it), and the receipt names that delivery.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return sc.withLead(cmd, func(ctx context.Context, l *lead.Lead) error {
				if err := l.Ack(ctx, args, receipt); err != nil {
					return err
				}
				if sc.json {
					out := map[string]any{"acked": args}
					if receipt != "" {
						out["receipt"] = receipt
					}
					return printJSON(cmd, out)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "acknowledged %s\n", strings.Join(args, " "))
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&receipt, "receipt", "", "the delivery this ack is the receipt of (letters, digits, '-' and '_', at most 64)")
	return cmd
}

func (sc *spawnContext) clearCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "clear [ID…]",
		Short: "Dismiss finished children's results unread (all owed children without ids); they are never delivered",
		Long: `clear dismisses the results of finished children without showing them: they count as
seen, so collect and wait never deliver them. Without ids it clears every child owed to
the caller now; with ids, those children, which must be the caller's own and finished.
Their reports stay readable with spawn show.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return sc.withLead(cmd, func(ctx context.Context, l *lead.Lead) error {
				cleared, err := l.Clear(ctx, args)
				if err != nil {
					return err
				}
				if sc.json {
					return printJSON(cmd, map[string]any{"cleared": cleared})
				}
				if len(cleared) == 0 {
					fmt.Fprintln(cmd.OutOrStdout(), "nothing to clear: no finished child is owed to you")
					return nil
				}
				fmt.Fprintf(cmd.OutOrStdout(), "cleared %s\n", strings.Join(cleared, " "))
				return nil
			})
		},
	}
}

func (sc *spawnContext) collectCommand() *cobra.Command {
	var exclude []string
	cmd := &cobra.Command{
		Use:   "collect",
		Short: "Block until children finish, then print one JSON delivery (for the spawn-watch mod); records nothing as seen",
		Long: `collect prints exactly one JSON object and exits 0:
  {"kind":"delivery","ids":[…],"text":"…"}  children finished and are owed to the caller
  {"kind":"empty","ids":[],"text":""}       nothing is owed and nothing runs
It blocks while the caller's children run, and gives up (empty) when its parent process
exits. The text is headers only; the caller acks the ids once it has passed them on.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return sc.withLead(cmd, func(ctx context.Context, l *lead.Lead) error {
				var ids []string
				for _, id := range exclude {
					if id = strings.TrimSpace(id); id == "" {
						continue
					}
					if _, err := spawn.ParseID(id); err != nil {
						return fmt.Errorf("--exclude: %w", err)
					}
					ids = append(ids, id)
				}
				d, err := l.Collect(ctx, ids)
				if err != nil {
					return err
				}
				return printJSON(cmd, d)
			})
		},
	}
	cmd.Flags().StringSliceVar(&exclude, "exclude", nil, "ids not to deliver (comma-separated), e.g. ones already delivered but not yet acked")
	return cmd
}
