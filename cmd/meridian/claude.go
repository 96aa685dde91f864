package main

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/meridian-gw/meridian/internal/config"
	"github.com/meridian-gw/meridian/internal/launch"
	"github.com/meridian-gw/meridian/internal/profile"
	"github.com/meridian-gw/meridian/internal/spawn"
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
(-p) never load it. Subcommands and --version run claude unchanged; --help prints this, then
claude's own help.

The config file is MERIDIAN_CONFIG, else meridian/config.toml in XDG_CONFIG_HOME or ~/.config.`,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			help := len(args) > 0 && (args[0] == "--help" || args[0] == "-h")
			if help {
				fmt.Fprintf(cmd.OutOrStdout(), "meridian claude: %s\n\n%s\n\nUsage:\n  %s\n\nThe claude CLI's own help follows.\n\n", cmd.Short, cmd.Long, cmd.UseLine())
			}
			self, err := os.Executable()
			if err != nil {
				return fmt.Errorf("find the meridian binary: %w", err)
			}
			cwd, err := os.Getwd()
			if err != nil {
				return fmt.Errorf("working directory: %w", err)
			}
			s, err := launch.Prepare(cmd.Context(), launch.Options{
				Args: args, Terminal: profile.IsTerminal(os.Stdout), Env: env, Environ: environ,
				Claude: envOr(env, spawn.EnvClaudePath, "claude"), DataDir: envOr(env, spawn.EnvDataDir, defaultDataDir(env)),
				Config: config.Path(env), Self: self, Cwd: cwd, Log: spawnLogger(env, slog.LevelWarn),
			})
			if err == nil {
				err = s.Exec(cmd.Context())
			}
			if help && err != nil {
				// This command's own help is out; the CLI's could not follow.
				fmt.Fprintf(cmd.OutOrStdout(), "(%v)\n", err)
				return nil
			}
			return err
		},
	}
}
