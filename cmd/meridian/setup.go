package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/meridian-gw/meridian/internal/clientsetup"
	"github.com/meridian-gw/meridian/internal/probe"
	"github.com/meridian-gw/meridian/internal/serve"
)

// newSetupCommand wires `meridian setup CLIENT`.
func newSetupCommand(env map[string]string, environ []string) *cobra.Command {
	var host string
	var port int
	var dryRun, undo, setDefault, printEnv bool
	var keyArg, keyEnv string
	var names []string
	for _, c := range clientsetup.Clients() {
		names = append(names, c.Name)
	}
	cmd := &cobra.Command{
		Use:   "setup CLIENT",
		Short: "Point a client's own configuration at Meridian (" + strings.Join(names, ", ") + ", or env)",
		Long: "setup edits the client's configuration where the client reads it, keeping every other setting and comment.\n" +
			"It prepares every edit first, refuses a malformed file naming its line, keeps a private backup of what it\n" +
			"replaces and replaces each file whole. Running it again changes nothing; --undo puts the backup back.\n" +
			"`meridian setup env --print` prints shell exports for clients that read the usual variables.",
		Example:   "  meridian setup codex --dry-run\n  meridian setup opencode --set-default\n  meridian setup --undo opencode",
		Args:      cobra.MaximumNArgs(1),
		ValidArgs: append(names, "env"),
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			if len(args) == 0 && undo {
				return fmt.Errorf("--undo needs the client whose files to put back: meridian setup --undo CLIENT")
			}
			if len(args) == 0 {
				fmt.Fprintln(out, "meridian setup CLIENT points one of these clients at Meridian:")
				for _, c := range clientsetup.Clients() {
					fmt.Fprintf(out, "  %-12s %s\n", c.Name, c.Title)
				}
				fmt.Fprintf(out, "  %-12s %s\n", "env", "anything that reads ANTHROPIC_BASE_URL or OPENAI_BASE_URL (prints shell exports: --print)")
				fmt.Fprintln(out, "\nFor example: meridian setup claude-code. --dry-run shows the change first; meridian setup --help says more.")
				return nil
			}
			base := "http://" + net.JoinHostPort(host, strconv.Itoa(port))
			t := clientsetup.Target{BaseURL: base, SetDefault: setDefault}
			key, err := setupKey(cmd, env, &t, keyArg, keyEnv)
			if err != nil {
				return err
			}
			if args[0] == "env" {
				if !printEnv {
					return fmt.Errorf("setup env writes no file: run `meridian setup env --print` and add its lines to your shell profile")
				}
				fmt.Fprintln(out, strings.Join(clientsetup.Exports(t), "\n"))
				return nil
			}
			c, err := clientsetup.Lookup(args[0])
			if err != nil {
				return err
			}
			backups := filepath.Join(envOr(env, "MERIDIAN_DATA_DIR", defaultDataDir(env)), "setup-backups")
			if undo {
				restored, err := clientsetup.Undo(c, backups)
				for _, p := range restored {
					fmt.Fprintln(out, "restored", p)
				}
				return err
			}
			models, err := probe.Models(cmd.Context(), base, key)
			if err != nil {
				// No Meridian to ask: the CLI's own list, else the names
				// the CLI takes whatever its version.
				models, err = serve.CLIModels(cmd.Context(), envOr(env, "MERIDIAN_CLAUDE_PATH", "claude"), environ)
				from := "the claude CLI's own model list"
				if err != nil || len(models) == 0 {
					models, from = []string{"sonnet", "opus", "haiku"}, "the claude CLI's model aliases (the CLI could not be asked)"
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "No Meridian answers at %s: offering %s: %s.\n", base, from, strings.Join(models, ", "))
			}
			t.Models = models
			home := env["HOME"]
			if home == "" {
				if home, err = os.UserHomeDir(); err != nil {
					return err
				}
			}
			plan, err := clientsetup.Prepare(c, t, env, home)
			if err != nil {
				return err
			}
			if len(plan.Changes) == 0 {
				fmt.Fprintf(out, "%s is already set up for Meridian at %s: nothing to change.\n", c.Title, base)
				return nil
			}
			if dryRun {
				fmt.Fprint(out, plan.Diff())
				return nil
			}
			if err := plan.Apply(backups); err != nil {
				return err
			}
			for _, ch := range plan.Changes {
				verb := "updated"
				if !ch.Existed {
					verb = "created"
				}
				fmt.Fprintln(out, verb, ch.Path)
			}
			fmt.Fprintf(out, "%s now reaches Meridian at %s (undo: meridian setup --undo %s).\n", c.Title, base, c.Name)
			for _, n := range plan.Notes {
				fmt.Fprintln(out, "  "+n)
			}
			return nil
		},
	}
	fs := cmd.Flags()
	addressFlags(fs, env, &host, &port, "Meridian")
	fs.BoolVar(&dryRun, "dry-run", false, "print the diff and change nothing")
	fs.BoolVar(&undo, "undo", false, "restore the files setup changed for CLIENT from its backup")
	fs.BoolVar(&setDefault, "set-default", false, "also make Meridian the client's default provider and model")
	fs.BoolVar(&printEnv, "print", false, "with env: print shell exports")
	fs.StringVar(&keyArg, "key", "", "write this Meridian API key (of `meridian key add`) into the client's configuration, which is then kept private; - reads it from stdin")
	fs.StringVar(&keyEnv, "key-env", "", "name this variable in the client's configuration instead, for the client to read the key from where it runs (default: MERIDIAN_API_KEY when it is set here)")
	return cmd
}

// setupKey decides how the client gets its key: the key itself (--key,
// or - for stdin), a variable it names (--key-env, else MERIDIAN_API_KEY
// when set here), or none. It returns the key to ask Meridian's model
// list with.
func setupKey(cmd *cobra.Command, env map[string]string, t *clientsetup.Target, key, keyEnv string) (string, error) {
	switch {
	case key != "" && keyEnv != "":
		return "", fmt.Errorf("give --key or --key-env, not both")
	case key == "-":
		b, err := io.ReadAll(io.LimitReader(cmd.InOrStdin(), 4096))
		if err != nil {
			return "", fmt.Errorf("reading the key from stdin: %w", err)
		}
		if key = strings.TrimSpace(string(b)); key == "" {
			return "", fmt.Errorf("--key -: stdin held no key")
		}
		t.Key = key
		return key, nil
	case key != "":
		t.Key = key
		return key, nil
	case keyEnv != "":
		t.KeyEnv = keyEnv
		return env[keyEnv], nil
	case env["MERIDIAN_API_KEY"] != "":
		t.KeyEnv = "MERIDIAN_API_KEY"
		return env["MERIDIAN_API_KEY"], nil
	}
	return "", nil
}
