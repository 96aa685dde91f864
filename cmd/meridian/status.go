package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/meridian-gw/meridian/internal/probe"
)

// newStatusCommand wires `meridian status`: exit 0 when a Meridian
// answers, 1 when nothing listens, 2 when something else holds the port,
// 3 when the Meridian reports it cannot serve (no CLI, not logged in).
func newStatusCommand(env map[string]string) *cobra.Command {
	var host, apiKey string
	var port int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Ask the instance on the configured port whether it is Meridian and what it is doing",
		Long: `status asks whatever listens on --host and --port whether it is Meridian and what it is doing.
It exits 0 when a Meridian answers and can serve, 1 when nothing listens, 2 when something
else holds the port, and 3 when the Meridian reports it cannot serve (its CLI missing or not
logged in).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			url := "http://" + net.JoinHostPort(host, strconv.Itoa(port))
			r, err := probe.Probe(cmd.Context(), url, apiKey)
			if errors.Is(err, probe.ErrNothing) {
				if asJSON {
					_ = json.NewEncoder(cmd.OutOrStdout()).Encode(map[string]any{"url": url, "listening": false})
				} else {
					fmt.Fprintf(cmd.OutOrStdout(), "No Meridian: %v. Start one with `meridian`.\n", err)
				}
				return exitCode(1)
			}
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				if err := enc.Encode(r); err != nil {
					return err
				}
			} else {
				fmt.Fprint(cmd.OutOrStdout(), r.Text())
			}
			switch {
			case !r.Meridian:
				return exitCode(2)
			case r.Health != nil && r.Health.Status == "unavailable":
				return exitCode(3)
			}
			return nil
		},
	}
	fs := cmd.Flags()
	addressFlags(fs, env, &host, &port, "the instance")
	fs.StringVar(&apiKey, "admin-key", env["MERIDIAN_ADMIN_KEY"], "the instance's admin key, to read its request figures (MERIDIAN_ADMIN_KEY)")
	fs.StringVar(&apiKey, "api-key", env["MERIDIAN_ADMIN_KEY"], "old name of --admin-key")
	_ = fs.MarkDeprecated("api-key", "use --admin-key")
	fs.BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

// addressFlags are --host and --port of a command that talks to a
// running Meridian (who names it in the help), defaulting like serve's.
func addressFlags(fs *pflag.FlagSet, env map[string]string, host *string, port *int, who string) {
	fs.StringVar(host, "host", envOr(env, "MERIDIAN_HOST", "127.0.0.1"), "address "+who+" listens on (MERIDIAN_HOST)")
	defPort, _ := strconv.Atoi(envOr(env, "MERIDIAN_PORT", "3456"))
	fs.IntVar(port, "port", defPort, "port "+who+" listens on (MERIDIAN_PORT)")
}
