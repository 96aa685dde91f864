package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/meridian-gw/meridian/internal/config"
	"github.com/meridian-gw/meridian/internal/serve"
)

// newAliasCommand wires `meridian alias`.
func newAliasCommand(env map[string]string) *cobra.Command {
	var dataDir, dsn string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "alias",
		Short: "Model names clients send that stand for other models: add, list, remove",
		Long: `An alias is a model name a client sends (an OpenAI model name a tool insists on, a short name
for a team) that Meridian answers with another model, and with an effort when the alias sets one
and the request does not. Aliases added here are kept in the store, for every host (within a
second); the settings file's [aliases] table adds more on one host, and a stored alias of the same
name wins. /v1/models lists them after the CLI's models, and an answer to an aliased request says
the model that answered in X-Meridian-Model. A key's scope is checked on that model.`,
		Example: `  meridian alias add gpt-4o claude-sonnet-5
  meridian alias add fast haiku --effort low
  meridian alias list
  meridian alias remove gpt-4o`,
	}
	cmd.PersistentFlags().StringVar(&dataDir, "data-dir", envOr(env, "MERIDIAN_DATA_DIR", defaultDataDir(env)), "where Meridian keeps its state (MERIDIAN_DATA_DIR)")
	cmd.PersistentFlags().StringVar(&dsn, "store", env["MERIDIAN_STORE"], "the shared store: empty for SQLite in the data dir, or a postgres:// DSN (MERIDIAN_STORE)")
	cmd.PersistentFlags().BoolVar(&asJSON, "json", false, "print JSON")

	var effort string
	add := &cobra.Command{
		Use:   "add NAME MODEL [--effort low|medium|high|xhigh|max]",
		Short: "Make NAME stand for MODEL (replacing an alias of that name)",
		Args:  cobra.ExactArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			if err := serve.AliasAdd(c.Context(), dataDir, dsn, args[0], args[1], effort); err != nil {
				return err
			}
			if asJSON {
				return printJSON(c, map[string]string{"name": args[0], "model": args[1], "effort": effort})
			}
			fmt.Fprintf(c.OutOrStdout(), "alias %s → %s%s: every host answers by it within a second\n", args[0], args[1], atEffort(effort))
			return nil
		},
	}
	add.Flags().StringVar(&effort, "effort", "", "the effort its requests get when they set none")

	list := &cobra.Command{
		Use:   "list",
		Short: "The aliases, the store's and the settings file's",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			list, err := serve.AliasList(c.Context(), dataDir, dsn, config.Path(env))
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(c, list)
			}
			tw := tabwriter.NewWriter(c.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tMODEL\tEFFORT\tKEPT IN")
			for _, a := range list {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", a.Name, a.Model, orDash(a.Effort), a.Source)
			}
			return tw.Flush()
		},
	}
	remove := &cobra.Command{
		Use:   "remove NAME",
		Short: "Delete a stored alias",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if err := serve.AliasRemove(c.Context(), dataDir, dsn, args[0]); err != nil {
				return err
			}
			fmt.Fprintf(c.OutOrStdout(), "removed alias %s\n", args[0])
			return nil
		},
	}
	cmd.AddCommand(add, list, remove)
	return cmd
}

func atEffort(e string) string {
	if e == "" {
		return ""
	}
	return " at " + e + " effort"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
