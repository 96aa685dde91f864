package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/meridian-gw/meridian/internal/apikeys"
	"github.com/meridian-gw/meridian/internal/clientsetup"
	"github.com/meridian-gw/meridian/internal/serve"
)

// newKeyCommand wires `meridian key`.
func newKeyCommand(env map[string]string) *cobra.Command {
	var dataDir, dsn string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "key",
		Short: "API keys for each person and tool: add, list, show, revoke, rotate",
		Long: `Each key has a name, an optional scope (--profiles, --models) and optional limits (--rpm,
--concurrent, --tokens-per-day), which every host sharing the store enforces. A key is shown once,
when it is made or rotated; only its digest is kept. Once any key exists the model routes need one
(or --admin-key, the admin key, which alone opens the pages and admin routes). Usage is attributed to
the key's name, never the key.`,
		Example: `  meridian key add laptop-codex --rpm 30 --concurrent 2   # prints the key once
  meridian setup codex --key mk-…                         # point a client at it
  meridian key add ci --models 'claude-sonnet-*' --tokens-per-day 2000000 --expires 30d
  meridian key list
  meridian key revoke laptop-codex`,
	}
	cmd.PersistentFlags().StringVar(&dataDir, "data-dir", envOr(env, "MERIDIAN_DATA_DIR", defaultDataDir(env)), "where Meridian keeps its state (MERIDIAN_DATA_DIR)")
	cmd.PersistentFlags().StringVar(&dsn, "store", env["MERIDIAN_STORE"], "the shared store: empty for SQLite in the data dir, or a postgres:// DSN (MERIDIAN_STORE)")
	cmd.PersistentFlags().BoolVar(&asJSON, "json", false, "print JSON")
	// run opens the store for one command and prints what it returns.
	run := func(c *cobra.Command, f func(m *apikeys.Manager) (any, error)) error {
		m, closeStore, err := serve.OpenKeys(c.Context(), dataDir, dsn, slog.New(slog.DiscardHandler))
		if err != nil {
			return err
		}
		defer closeStore()
		v, err := f(m)
		switch {
		case err != nil:
			return err
		case asJSON:
			return printJSON(c, v)
		}
		if list, ok := v.([]apikeys.View); ok {
			return apikeys.PrintTable(c.OutOrStdout(), list)
		}
		return apikeys.PrintOne(c.OutOrStdout(), v.(apikeys.View))
	}
	one := func(use, short string, f func(*apikeys.Manager, context.Context, string) (apikeys.View, error)) *cobra.Command {
		return &cobra.Command{Use: use + " NAME", Short: short, Args: cobra.ExactArgs(1),
			RunE: func(c *cobra.Command, args []string) error {
				return run(c, func(m *apikeys.Manager) (any, error) { return f(m, c.Context(), args[0]) })
			}}
	}

	var profiles, models, expires string
	var spec apikeys.Spec
	add := &cobra.Command{
		Use:   "add NAME",
		Short: "Make a key (shown once) with its scope and limits",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			var made apikeys.View
			var all []apikeys.View
			err := run(c, func(m *apikeys.Manager) (any, error) {
				s := spec
				s.Name = args[0]
				v, err := m.Add(c.Context(), s, profiles, models, expires)
				if err == nil {
					made = v
					all, _ = m.List(c.Context())
				}
				return v, err
			})
			if err == nil && !asJSON {
				repointNote(c.ErrOrStderr(), made, all)
			}
			return err
		},
	}
	add.Flags().StringVar(&profiles, "profiles", "", "the profiles it may use, comma-separated (default: any)")
	add.Flags().StringVar(&models, "models", "", "the models it may ask for, comma-separated names or patterns such as claude-sonnet-* (default: any)")
	add.Flags().IntVar(&spec.RPM, "rpm", 0, "most requests in any 60 s (0: no limit)")
	add.Flags().IntVar(&spec.Concurrent, "concurrent", 0, "most requests running at once (0: no limit)")
	add.Flags().Int64Var(&spec.TokensPerDay, "tokens-per-day", 0, "most tokens a UTC day, input and output (0: no limit); the answer that crosses it finishes, the next is refused")
	add.Flags().StringVar(&expires, "expires", "", "when it stops working: a date (2027-01-31, UTC), an RFC 3339 time, or a span (30d, 12h)")
	budgetFlags(add, &spec)

	var set apikeys.Spec
	var setExpires, setProfiles, setModels string
	setCmd := &cobra.Command{
		Use:   "set NAME",
		Short: "Change a key's scope, limits, budget or default model (only the flags given)",
		Example: `  meridian key set ci --budget 25 --per month
  meridian key set laptop --default-model claude-sonnet-5 --rpm 0`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			fl := c.Flags()
			return run(c, func(m *apikeys.Manager) (any, error) {
				return m.Update(c.Context(), args[0], func(s *apikeys.Spec) error {
					var err error
					for name, apply := range map[string]func(){
						"rpm": func() { s.RPM = set.RPM }, "concurrent": func() { s.Concurrent = set.Concurrent },
						"tokens-per-day": func() { s.TokensPerDay = set.TokensPerDay }, "default-model": func() { s.DefaultModel = set.DefaultModel },
						"budget": func() { s.Budget = set.Budget }, "per": func() { s.Per = set.Per },
						"budget-alert": func() { s.BudgetAlert = set.BudgetAlert }, "capture": func() { s.Capture = set.Capture },
						"profiles": func() { s.Profiles = apikeys.Names(setProfiles) }, "models": func() { s.Models = apikeys.Names(setModels) },
						"expires": func() { s.Expires, err = apikeys.ParseExpiry(setExpires, time.Now()) },
					} {
						if fl.Changed(name) {
							apply()
						}
					}
					if fl.Changed("budget") && !fl.Changed("budget-alert") {
						s.BudgetAlert = 0 // the default share of the new budget
					}
					return err
				})
			})
		},
	}
	setCmd.Flags().StringVar(&setProfiles, "profiles", "", "the profiles it may use, comma-separated (empty: any)")
	setCmd.Flags().StringVar(&setModels, "models", "", "the models it may ask for, comma-separated names or patterns (empty: any)")
	setCmd.Flags().IntVar(&set.RPM, "rpm", 0, "most requests in any 60 s (0: no limit)")
	setCmd.Flags().IntVar(&set.Concurrent, "concurrent", 0, "most requests running at once (0: no limit)")
	setCmd.Flags().Int64Var(&set.TokensPerDay, "tokens-per-day", 0, "most tokens a UTC day (0: no limit)")
	setCmd.Flags().StringVar(&setExpires, "expires", "", "when it stops working (empty: never)")
	budgetFlags(setCmd, &set)

	list := &cobra.Command{
		Use:   "list",
		Short: "List the keys (never the keys themselves)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return run(c, func(m *apikeys.Manager) (any, error) { return m.List(c.Context()) })
		},
	}
	cmd.AddCommand(add, setCmd, list,
		one("show", "Show a key's scope, limits and state", (*apikeys.Manager).Show),
		one("revoke", "End a key on every host at once", (*apikeys.Manager).Revoke),
		one("rotate", "Give a key a new secret (shown once); the old one stops working", (*apikeys.Manager).Rotate))
	return cmd
}

// budgetFlags are the flags of a key's default model, dollar budget and capture.
func budgetFlags(c *cobra.Command, s *apikeys.Spec) {
	c.Flags().StringVar(&s.DefaultModel, "default-model", "", "the model its requests for \"default\" get (empty: the CLI's default)")
	c.Flags().Float64Var(&s.Budget, "budget", 0, "most US dollars of API-equivalent cost per --per (0: none); the answer that crosses it finishes, the next is refused until the period ends")
	c.Flags().StringVar(&s.Per, "per", "month", "the budget's period: day, week (from Monday) or month, in UTC")
	c.Flags().Float64Var(&s.BudgetAlert, "budget-alert", 0, "the spend that sends an alert to `meridian alert` sinks (0: 80% of --budget)")
	c.Flags().StringVar(&s.Capture, "capture", "", "what the request inspector keeps of its requests: off, metadata or content (empty: as meridian serve's --capture)")
}

// repointNote tells the person who made a key how clients reach Meridian
// with it, and, for the first key in force, that keyless clients (as
// setup configured them without a key) are refused from now on.
func repointNote(w io.Writer, made apikeys.View, all []apikeys.View) {
	first := true
	for _, k := range all {
		if k.Name != made.Name && k.Status == "active" {
			first = false
		}
	}
	var names []string
	for _, c := range clientsetup.Clients() {
		names = append(names, c.Name)
	}
	if first {
		fmt.Fprintln(w, "\nThis is the first key: from now on the model routes refuse a request without a key (401).\n"+
			"Clients set up without a key stop working (they get 401, which names the fix); point each one at a key:")
	} else {
		fmt.Fprintln(w, "\nPoint a client at it:")
	}
	fmt.Fprintf(w, "  meridian setup CLIENT --key %s\n      writes the key into the client's configuration, or\n", made.Key)
	fmt.Fprintf(w, "  export MERIDIAN_API_KEY=%s; meridian setup CLIENT\n      makes the configuration name the variable, for the client to read where it runs.\n", made.Key)
	fmt.Fprintf(w, "CLIENT is one of %s. Other clients send it as x-api-key or Authorization: Bearer.\n", strings.Join(names, ", "))
}
