package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/meridian-gw/meridian/internal/config"
	"github.com/meridian-gw/meridian/internal/httpapi"
	"github.com/meridian-gw/meridian/internal/probe"
	"github.com/meridian-gw/meridian/internal/service"
)

// newServiceCommand wires `meridian service install|uninstall|status|logs`.
func newServiceCommand(env map[string]string) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "service",
		Short: "Run Meridian at login: a systemd user unit (Linux) or a launchd agent (macOS)",
		Example: `  meridian service install     # with the MERIDIAN_* settings of this shell; starts it
  meridian service status      # the service manager's view, and whether Meridian answers
  meridian service logs
  meridian service uninstall`,
		Args: cobra.NoArgs,
	}
	manager := func() service.Manager {
		m := service.Manager{GOOS: runtime.GOOS, Home: env["HOME"], Env: env, UID: os.Getuid()}
		if m.Home == "" {
			m.Home, _ = os.UserHomeDir()
		}
		if u, err := user.Current(); err == nil {
			m.User = u.Username
		}
		return m
	}
	// The key's environment file sits beside the settings file.
	envFile := filepath.Join(filepath.Dir(config.Path(env)), "service.env")
	install := &cobra.Command{
		Use:   "install",
		Short: "Write the unit that runs `meridian serve` with your settings file, and start it where the manager runs",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			bin, err := os.Executable()
			if err == nil {
				bin, err = filepath.EvalSymlinks(bin)
			}
			if err != nil {
				return fmt.Errorf("where this binary is: %w", err)
			}
			m := manager()
			u, err := service.ForBinary(bin, config.Path(env), envFile,
				m.LogFile(), env, httpapi.DefaultDrainTimeout)
			if err != nil {
				return err
			}
			return m.Install(cmd.Context(), u, cmd.OutOrStdout())
		},
	}
	uninstall := &cobra.Command{
		Use:   "uninstall",
		Short: "Stop the service and remove its unit",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return manager().Uninstall(cmd.Context(), envFile, cmd.OutOrStdout())
		},
	}
	var host string
	var port int
	status := &cobra.Command{
		Use:   "status",
		Short: "Say what the service manager reports of the unit, beside what `meridian status` reports",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			st := manager().State(cmd.Context())
			installed := "not installed"
			if st.Installed {
				installed = "installed"
			}
			fmt.Fprintf(out, "unit: %s (%s)\n", st.Path, installed)
			switch {
			case !st.Running:
				fmt.Fprintf(out, "service manager: systemd is not running for this user (%s)\n", st.Why)
			case runtime.GOOS == "darwin":
				fmt.Fprintf(out, "launchd: %s\n", st.Active)
			default:
				fmt.Fprintf(out, "systemd: %s, %s\n", st.Active, st.Enabled)
			}
			url := "http://" + net.JoinHostPort(host, strconv.Itoa(port))
			r, err := probe.Probe(cmd.Context(), url, env["MERIDIAN_ADMIN_KEY"])
			if errors.Is(err, probe.ErrNothing) {
				fmt.Fprintf(out, "meridian: nothing answers at %s\n", url)
				return nil
			}
			if err != nil {
				return err
			}
			fmt.Fprint(out, r.Text())
			return nil
		},
	}
	addressFlags(status.Flags(), env, &host, &port, "the service")
	var follow bool
	logs := &cobra.Command{
		Use:   "logs",
		Short: "Print the service's recent output (journalctl, or the launchd agent's log file)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return manager().Logs(cmd.Context(), follow, cmd.OutOrStdout())
		},
	}
	logs.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing new output")
	cmd.AddCommand(install, uninstall, status, logs)
	return cmd
}
