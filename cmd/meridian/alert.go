package main

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/meridian-gw/meridian/internal/serve"
)

// newAlertCommand wires `meridian alert`.
func newAlertCommand(env map[string]string) *cobra.Command {
	var dataDir, dsn string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "alert",
		Short: "Where Meridian tells you about the accounts: add, list, test, remove webhook sinks",
		Long: `Meridian posts an alert when a profile's plan window crosses --alert-at (80 % and 100 %), when the
upstream begins to serve a profile from paid extra usage, when a profile is benched for its limit and
when it is back, when the upstream refuses a profile's credentials, and when an API key's spend reaches
its --budget-alert or its --budget: one alert per crossing, whichever host sees it first (the store keeps which were sent). Each post is
signed: X-Meridian-Signature is sha256= and the hex HMAC-SHA256, under the sink's secret (shown once,
when it is added), of X-Meridian-Timestamp, a dot, and the body. A sink that does not answer 2xx is
tried up to 5 times over about 15 s; no request ever waits for it.`,
		Example: `  meridian alert add ops --webhook https://hooks.example.com/meridian
  meridian alert add team --webhook https://hooks.slack.com/services/… --format slack
  meridian alert test ops
  meridian alert list`,
	}
	cmd.PersistentFlags().StringVar(&dataDir, "data-dir", envOr(env, "MERIDIAN_DATA_DIR", defaultDataDir(env)), "where Meridian keeps its state (MERIDIAN_DATA_DIR)")
	cmd.PersistentFlags().StringVar(&dsn, "store", env["MERIDIAN_STORE"], "the shared store: empty for SQLite in the data dir, or a postgres:// DSN (MERIDIAN_STORE)")
	cmd.PersistentFlags().BoolVar(&asJSON, "json", false, "print JSON")

	var webhook, format string
	add := &cobra.Command{
		Use:   "add NAME --webhook URL [--format json|slack]",
		Short: "Add a webhook sink (https, or http to this machine); prints its signing secret once",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			secret, err := serve.AlertAdd(c.Context(), dataDir, dsn, args[0], webhook, format)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(c, map[string]string{"name": args[0], "url": webhook, "format": format, "secret": secret})
			}
			fmt.Fprintf(c.OutOrStdout(), "added alert sink %s (%s)\nits signing secret, shown this once: %s\n", args[0], format, secret)
			return nil
		},
	}
	add.Flags().StringVar(&webhook, "webhook", "", "the URL alerts are posted to")
	add.Flags().StringVar(&format, "format", "json", "json (the alert's fields) or slack ({\"text\": …})")
	_ = add.MarkFlagRequired("webhook")

	list := &cobra.Command{
		Use:   "list",
		Short: "The sinks, and the latest alerts sent",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			sinks, recent, err := serve.AlertSinks(c.Context(), dataDir, dsn)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(c, map[string]any{"sinks": sinks, "recent": recent})
			}
			tw := tabwriter.NewWriter(c.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tFORMAT\tURL")
			for _, s := range sinks {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Name, s.Format, s.URL)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if len(recent) > 0 {
				fmt.Fprintln(c.OutOrStdout(), "\nLatest alerts:")
				for _, a := range recent {
					fmt.Fprintf(c.OutOrStdout(), "  %s  %s\n", a.At.Local().Format(time.DateTime), a.Message)
				}
			}
			return nil
		},
	}
	test := &cobra.Command{
		Use:   "test NAME",
		Short: "Post a test alert to a sink now, once",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if err := serve.AlertTest(c.Context(), dataDir, dsn, args[0]); err != nil {
				return err
			}
			fmt.Fprintf(c.OutOrStdout(), "alert sink %s took the test alert\n", args[0])
			return nil
		},
	}
	remove := &cobra.Command{
		Use:   "remove NAME",
		Short: "Remove a sink",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if err := serve.AlertRemove(c.Context(), dataDir, dsn, args[0]); err != nil {
				return err
			}
			fmt.Fprintf(c.OutOrStdout(), "removed alert sink %s\n", args[0])
			return nil
		},
	}
	cmd.AddCommand(add, list, test, remove)
	return cmd
}
