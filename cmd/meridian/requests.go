package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/meridian-gw/meridian/internal/serve"
)

// newRequestsCommand wires `meridian requests`.
func newRequestsCommand(env map[string]string) *cobra.Command {
	var dataDir, dsn string
	cmd := &cobra.Command{
		Use:   "requests",
		Short: "The requests the inspector captured (meridian serve --capture): export them",
	}
	cmd.PersistentFlags().StringVar(&dataDir, "data-dir", envOr(env, "MERIDIAN_DATA_DIR", defaultDataDir(env)), "where Meridian keeps its state (MERIDIAN_DATA_DIR)")
	cmd.PersistentFlags().StringVar(&dsn, "store", env["MERIDIAN_STORE"], "the shared store: empty for SQLite in the data dir, or a postgres:// DSN (MERIDIAN_STORE)")
	var since string
	export := &cobra.Command{
		Use:   "export [--since 24h|2026-12-01T00:00:00Z]",
		Short: "Write the captured requests as JSON lines, oldest first, to stdout",
		Example: `  meridian requests export --since 24h > requests.jsonl
  meridian requests export --since 2026-12-01T00:00:00Z --store postgres://… > december.jsonl`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			from, err := sinceTime(since, time.Now())
			if err != nil {
				return err
			}
			n, err := serve.RequestsExport(c.Context(), dataDir, dsn, from, c.OutOrStdout())
			if err != nil {
				return err
			}
			fmt.Fprintf(c.ErrOrStderr(), "%d captured requests since %s\n", n, from.UTC().Format(time.RFC3339))
			return nil
		},
	}
	export.Flags().StringVar(&since, "since", "24h", "a span back from now (24h, 90m) or an RFC 3339 time")
	cmd.AddCommand(export)
	return cmd
}

// sinceTime reads --since: a span back from now or an RFC 3339 time.
func sinceTime(v string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(v); err == nil && d > 0 {
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("--since %q: want a span (24h) or an RFC 3339 time (2026-12-01T00:00:00Z)", v)
}
