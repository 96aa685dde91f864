package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/meridian-gw/meridian/internal/backend"
	"github.com/meridian-gw/meridian/internal/profile"
	"github.com/meridian-gw/meridian/internal/serve"
)

// profileView is a profile as list and add print it: never its secret.
type profileView struct {
	profile.Profile
	Default bool          `json:"default"`
	Auth    *backend.Auth `json:"auth,omitempty"`
	Error   string        `json:"error,omitempty"`
	// Plan is the plan's rate-limit state as the CLI's /usage reads it.
	Plan *backend.PlanUsage `json:"plan,omitempty"`
}

// newProfileCommand wires `meridian profile`.
func newProfileCommand(env map[string]string, environ []string) *cobra.Command {
	var dataDir, claudePath, codexPath string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "profile",
		Short: "Claude and codex accounts side by side: add, list, log in, remove, choose the default",
		Long: `A profile is a named auth context for a CLI with its own config dir under the data dir
(profiles/NAME/), so logins, transcripts and settings never mix. Kinds for claude: login (the CLI's
own login flow, in your terminal), token (a long-lived token from 'claude setup-token') and api (an
API key, optionally with --base-url). Kinds for codex (--backend codex), each with its own CODEX_HOME:
codex-login (codex's own login, a ChatGPT plan, in your terminal) and codex-api (an OpenAI API key,
given to 'codex login --with-api-key' and kept by codex). Tokens and keys are read from standard
input, never from the command line, and kept in files only you can read. The implicit profile
"default" uses the environment.`,
		Example: `  meridian profile add pro --kind login          # the CLI's own login, in this terminal
  meridian profile add work --kind api < key.txt # an API key, from standard input
  meridian profile add gpt --kind codex-login    # codex's own login (a ChatGPT plan), in this terminal
  meridian profile add oai --kind codex-api < openai-key.txt  # an OpenAI API key, kept by codex
  meridian profile list                          # login state and plan limits of each
  meridian profile default pro                   # requests that name no profile go here`,
	}
	cmd.PersistentFlags().StringVar(&dataDir, "data-dir", envOr(env, "MERIDIAN_DATA_DIR", defaultDataDir(env)), "where Meridian keeps its state (MERIDIAN_DATA_DIR)")
	cmd.PersistentFlags().StringVar(&claudePath, "claude-path", envOr(env, "MERIDIAN_CLAUDE_PATH", "claude"), "the claude CLI binary (MERIDIAN_CLAUDE_PATH)")
	cmd.PersistentFlags().StringVar(&codexPath, "codex-path", envOr(env, "MERIDIAN_CODEX_PATH", "codex"), "the codex CLI binary, for the codex kinds (MERIDIAN_CODEX_PATH)")
	clis := func() serve.CLIPaths { return serve.CLIPaths{Claude: claudePath, Codex: codexPath} }
	cmd.PersistentFlags().BoolVar(&asJSON, "json", false, "print JSON")
	st := func() *profile.Store { return profile.Open(dataDir) }
	show := func(c *cobra.Command, v any, text string) error {
		if asJSON {
			return printJSON(c, v)
		}
		fmt.Fprintln(c.OutOrStdout(), text)
		return nil
	}

	var kind, baseURL string
	var priority int
	var planOnly bool
	var loginTimeout time.Duration
	add := &cobra.Command{
		Use:   "add NAME --kind login|token|api|codex-login|codex-api",
		Short: "Add a profile (token and api: the secret on standard input; login: the CLI's login in your terminal)",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			p := profile.Profile{Name: args[0], Kind: profile.Kind(kind), Priority: priority, BaseURL: baseURL, PlanOnly: planOnly}
			if (p.Kind == profile.Login || p.Kind == profile.CodexLogin) && !profile.IsTerminal(os.Stdin) {
				return errNoTerminal(p.Name)
			}
			secret := ""
			if p.Kind == profile.Token || p.Kind == profile.API || p.Kind == profile.CodexAPI {
				what := map[profile.Kind]string{profile.Token: "token from `claude setup-token`", profile.API: "API key", profile.CodexAPI: "OpenAI API key"}[p.Kind]
				s, err := profile.ReadSecret(os.Stdin, c.ErrOrStderr(), what)
				if err != nil {
					return err
				}
				secret = s
			}
			// A codex-api key goes to codex's own login, in the profile's
			// home: Meridian keeps no copy.
			kept, codexKey := secret, ""
			if p.Kind == profile.CodexAPI {
				kept, codexKey = "", secret
			}
			if err := st().Add(p, kept); err != nil {
				return err
			}
			if p.Kind == profile.Login || p.Kind.CLI() == "codex" {
				if err := runLogin(c, st(), p, clis(), environ, loginTimeout, codexKey); err != nil {
					// A profile that cannot answer is not left behind.
					if rmErr := st().Remove(p.Name, nil); rmErr != nil {
						return fmt.Errorf("profile %s: %w; removing it failed too: %v", p.Name, err, rmErr)
					}
					return fmt.Errorf("profile %s was not added: %w", p.Name, err)
				}
			}
			return show(c, profileView{Profile: p}, fmt.Sprintf("added profile %s (%s, priority %d)", p.Name, p.Kind, p.Priority))
		},
	}
	add.Flags().StringVar(&kind, "kind", "", "login, token or api (claude); codex-login or codex-api (codex)")
	add.Flags().IntVar(&priority, "priority", 0, "order for failover: lower goes first")
	add.Flags().StringVar(&baseURL, "base-url", "", "an api profile's API base URL")
	add.Flags().BoolVar(&planOnly, "plan-only", false, planOnlyUsage)
	add.Flags().DurationVar(&loginTimeout, "login-timeout", defaultLoginTimeout, "how long a login profile's login may take before it is given up and the profile removed")
	_ = add.MarkFlagRequired("kind")

	list := &cobra.Command{
		Use:   "list",
		Short: "The profiles: name, kind, priority, default, and the login state claude reports in each",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			l, err := st().Read()
			if err != nil {
				return err
			}
			views := make([]profileView, len(l.Profiles))
			var wg sync.WaitGroup
			for i, p := range l.Profiles {
				views[i] = profileView{Profile: p, Default: p.Name == l.Default}
				wg.Go(func() {
					views[i].Auth, views[i].Error = serve.ProfileAuth(c.Context(), st(), p, clis(), environ)
					if views[i].Auth != nil && views[i].Auth.LoggedIn {
						views[i].Plan = serve.ProfilePlan(c.Context(), st(), p, clis(), environ)
					}
				})
			}
			wg.Wait()
			if asJSON {
				return printJSON(c, views)
			}
			tw := tabwriter.NewWriter(c.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tKIND\tPRIORITY\tDEFAULT\tLOGIN\tRATE LIMITS")
			// A long reason (the CLI missing) goes under the table, once,
			// so the columns stay readable.
			var notes []string
			for _, v := range views {
				login, limits := "unknown (see below)", "-"
				switch {
				case v.Auth == nil:
					if !slices.Contains(notes, v.Error) {
						notes = append(notes, v.Error)
					}
				case v.Auth.LoggedIn:
					login, limits = "logged in ("+v.Auth.Method+")", limitsText(v.Plan)
				default:
					login = "not logged in"
				}
				def := ""
				if v.Default {
					def = "yes"
				}
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", v.Name, v.Kind, v.Priority, def, login, limits)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			for _, n := range notes {
				fmt.Fprintln(c.OutOrStdout(), "\nThe login could not be checked: "+strings.TrimPrefix(n, "unknown: "))
			}
			return nil
		},
	}

	login := &cobra.Command{
		Use:   "login NAME",
		Short: "Log a login profile in again, with the CLI's own flow in your terminal",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			_, p, err := st().Find(args[0])
			if err != nil {
				return err
			}
			if p.Kind == profile.CodexAPI {
				return fmt.Errorf("profile %s is of kind codex-api: its key is given to codex when it is added; remove it and add it again with a new key", p.Name)
			}
			if !profile.IsTerminal(os.Stdin) {
				return errNoTerminal(p.Name)
			}
			if err := runLogin(c, st(), p, clis(), environ, loginTimeout, ""); err != nil {
				return err
			}
			return show(c, profileView{Profile: p}, "logged in profile "+p.Name)
		},
	}
	login.Flags().DurationVar(&loginTimeout, "login-timeout", defaultLoginTimeout, "how long the login may take before it is given up")

	remove := &cobra.Command{
		Use:   "remove NAME",
		Short: "Remove a profile, its secret and its config dir (refused while a turn runs on it)",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			busy := func(name string) (bool, error) {
				return serve.ProfileBusy(c.Context(), dataDir, env["MERIDIAN_STORE"], name)
			}
			before, err := st().Read()
			if err != nil {
				return err
			}
			if err := st().Remove(args[0], busy); err != nil {
				return err
			}
			text, v := "removed profile "+args[0], map[string]string{"removed": args[0]}
			if before.Default == args[0] {
				text += "; it was the default, which is now " + profile.DefaultName + " (the login of the environment meridian runs in; `meridian profile default NAME` picks another)"
				v["default"] = profile.DefaultName
			}
			return show(c, v, text)
		},
	}

	def := &cobra.Command{
		Use:   "default NAME",
		Short: "Use NAME for requests that name no profile",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if err := st().SetDefault(args[0]); err != nil {
				return err
			}
			return show(c, map[string]string{"default": args[0]}, "default profile: "+args[0])
		},
	}
	set := &cobra.Command{
		Use:   "set NAME [--priority N] [--plan-only[=false]]",
		Short: "Change a profile's priority or whether it may draw paid extra usage",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			var s profile.Settings
			if c.Flags().Changed("priority") {
				s.Priority = &priority
			}
			if c.Flags().Changed("plan-only") {
				s.PlanOnly = &planOnly
			}
			if s == (profile.Settings{}) {
				return errors.New("nothing to set: give --priority or --plan-only")
			}
			p, err := st().Set(args[0], s)
			if err != nil {
				return err
			}
			return show(c, profileView{Profile: p}, fmt.Sprintf("profile %s: priority %d, plan only %v", p.Name, p.Priority, p.PlanOnly))
		},
	}
	set.Flags().IntVar(&priority, "priority", 0, "order among profiles without plan figures, and for failover: lower goes first")
	set.Flags().BoolVar(&planOnly, "plan-only", false, planOnlyUsage)
	unbench := &cobra.Command{
		Use:   "unbench NAME",
		Short: "Reopen a benched profile now, on every meridian sharing the store (its plan figures are read again from its next turn)",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if _, _, err := st().Find(args[0]); err != nil {
				return err
			}
			if err := serve.ProfileUnbench(c.Context(), dataDir, env["MERIDIAN_STORE"], args[0]); err != nil {
				return err
			}
			return show(c, map[string]string{"unbenched": args[0]}, "profile "+args[0]+" is open again; running meridians take it within a second")
		},
	}
	check := &cobra.Command{
		Use:   "check NAME",
		Short: "Check a profile's login and plan figures now, and share the figures with every meridian sharing the store",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			l, p, err := st().Find(args[0])
			if err != nil {
				return err
			}
			v := profileView{Profile: p, Default: p.Name == l.Default}
			v.Auth, v.Error = serve.ProfileAuth(c.Context(), st(), p, clis(), environ)
			login, limits := "unknown: "+v.Error, "-"
			if v.Auth != nil && v.Auth.LoggedIn {
				v.Plan = serve.ProfilePlan(c.Context(), st(), p, clis(), environ)
				login, limits = "logged in ("+v.Auth.Method+")", limitsText(v.Plan)
				if v.Plan != nil {
					if err := serve.ProfileShareFigures(c.Context(), dataDir, env["MERIDIAN_STORE"], p.Name, *v.Plan); err != nil {
						return fmt.Errorf("profile %s: its figures could not be shared: %w", p.Name, err)
					}
				}
			} else if v.Auth != nil {
				login = "not logged in"
			}
			return show(c, v, fmt.Sprintf("profile %s: %s; rate limits: %s", p.Name, login, limits))
		},
	}
	cmd.AddCommand(add, list, login, remove, def, set, unbench, check)
	return cmd
}

const planOnlyUsage = "never draw paid extra usage: once the plan's windows are spent, the profile takes no request until they reset (login and token profiles)"

// limitsText is a plan's windows on one line: share used and reset.
func limitsText(u *backend.PlanUsage) string {
	switch {
	case u == nil:
		return "unknown (no answer in time)"
	case !u.Available:
		return "none (no plan limits with this login)"
	}
	var parts []string
	for _, w := range u.Windows {
		part := w.Name
		if w.Utilization != nil {
			part += fmt.Sprintf(" %.0f%%", *w.Utilization)
		}
		if w.ResetsAt != nil {
			part += " until " + w.ResetsAt.Local().Format("Mon 15:04")
		}
		parts = append(parts, part)
	}
	if len(parts) == 0 {
		return "no window reported"
	}
	return strings.Join(parts, ", ")
}

// defaultLoginTimeout bounds the CLI's login: long enough to open the
// URL, sign in and paste the code back.
const defaultLoginTimeout = 10 * time.Minute

// errNoTerminal refuses a login with nobody to answer its prompt: the
// CLI would wait for a pasted code forever.
func errNoTerminal(name string) error {
	return fmt.Errorf("a login profile signs in with the claude CLI's own login, which asks for a code in a terminal, "+
		"and standard input is not one: run `meridian profile add %s --kind login` in a terminal, or add a token profile "+
		"(`claude setup-token`, then `meridian profile add %s --kind token`, the token on standard input)", name, name)
}

// interrupted reports whether the CLI ended on the terminal's Ctrl-C,
// which reaches it and meridian both: by SIGINT, or exiting 128+2.
func interrupted(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ee.ExitCode() == 128+int(syscall.SIGINT) || ok && ws.Signaled() && ws.Signal() == syscall.SIGINT
}

// runLogin runs the CLI's login for a profile on the user's terminal (or,
// for a codex-api profile, codex's login with the key on its standard
// input), at most timeout, and then checks that the profile is logged in.
func runLogin(c *cobra.Command, s *profile.Store, p profile.Profile, clis serve.CLIPaths, environ []string, timeout time.Duration, codexKey string) error {
	ctx, cancel := context.WithTimeout(c.Context(), timeout)
	defer cancel()
	var cmd *exec.Cmd
	var err error
	name := "claude"
	if p.Kind.CLI() == "codex" {
		name = "codex"
		cmd, err = s.CodexLoginCommand(ctx, p, clis.Codex, environ)
	} else {
		cmd, err = s.LoginCommand(ctx, p, clis.Claude, environ)
	}
	if err != nil {
		return err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, c.OutOrStdout(), c.ErrOrStderr()
	if p.Kind == profile.CodexAPI {
		cmd.Stdin = strings.NewReader(codexKey + "\n")
	}
	cmd.WaitDelay = 5 * time.Second
	err = cmd.Run()
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("the login did not finish within %s (--login-timeout)", timeout)
	case c.Context().Err() != nil || interrupted(err):
		return errors.New("the login was interrupted")
	case err != nil:
		return fmt.Errorf("the %s CLI's login failed: %w", name, err)
	}
	a, why := serve.ProfileAuth(c.Context(), s, p, clis, environ)
	if a == nil || !a.LoggedIn {
		if why == "" {
			why = "the CLI reports it logged out"
		}
		return fmt.Errorf("the login ended, but the profile is not logged in (%s)", why)
	}
	return nil
}
