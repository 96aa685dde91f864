// Command meridian-desktop is Meridian's desktop companion: a tray icon
// that shows what the gateway is doing, starts it (or attaches to the one
// a supervisor runs), notifies, and opens a small panel. It is a separate
// binary so that meridian itself needs no GUI library, and pure Go itself:
// the panel's window is meridian-panel's (cgo, WebKitGTK), the tray is D-Bus.
package main

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/meridian-gw/meridian/internal/clientsetup"
	"github.com/meridian-gw/meridian/internal/dbusnotify"
	"github.com/meridian-gw/meridian/internal/desktop"
	"github.com/meridian-gw/meridian/internal/keeper"
	"github.com/meridian-gw/meridian/internal/notice"
	"github.com/meridian-gw/meridian/internal/tray"
)

// releaseVersion is set by the release build: the meridian the
// companion starts must be the same version.
var releaseVersion string

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := root().ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "meridian-desktop:", err)
		os.Exit(1)
	}
}

func root() *cobra.Command {
	var (
		host, key, binary, panel, statePath, off string
		port                                     int
		serveArgs                                []string
		every                                    time.Duration
		install, remove                          bool
	)
	cmd := &cobra.Command{
		Use:   "meridian-desktop",
		Short: "Meridian's desktop companion: a tray icon, notifications and a panel",
		Long: `meridian-desktop shows what the Meridian gateway on --host:--port is doing: its
icon says serving, paused, degraded or down, its tooltip the live conversations
and the tightest plan window. When nothing listens there it starts meridian
serve itself (restarted after a crash at most 3 times in 10 minutes, drained
on quit); when a Meridian already serves there (the user service, a container)
it attaches and never starts, stops or replaces it.`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			self, err := os.Executable()
			if err != nil {
				return fmt.Errorf("find the companion's own binary: %w", err)
			}
			auto := desktop.Autostart{Home: os.Getenv("HOME"), ConfigHome: os.Getenv("XDG_CONFIG_HOME")}
			switch {
			case install:
				argv := []string{self, "--host", host, "--port", strconv.Itoa(port)}
				if err := auto.Install(argv); err != nil {
					return err
				}
				fmt.Fprintln(cmd.OutOrStdout(), "meridian-desktop starts at login:", auto.Path())
				return nil
			case remove:
				if err := auto.Remove(); err != nil {
					return err
				}
				fmt.Fprintln(cmd.OutOrStdout(), "meridian-desktop no longer starts at login")
				return nil
			}
			cats, err := categories(off)
			if err != nil {
				return err
			}
			if binary == "" {
				binary = cmp.Or(beside(self, "meridian"), "meridian") // not found: said when it is needed
			}
			if panel == "" {
				panel = beside(self, "meridian-panel")
			}
			if statePath == "" {
				statePath = defaultStatePath()
			}
			log := slog.New(slog.NewTextHandler(os.Stderr, nil))
			env := os.Environ()
			if key != "" {
				env = append(env, "MERIDIAN_ADMIN_KEY="+key)
			}
			cfg := desktop.Config{
				Keeper: keeper.Config{Addr: net.JoinHostPort(host, strconv.Itoa(port)), Binary: binary, Args: serveArgs,
					Env: env, Version: releaseVersion, Output: os.Stderr},
				Key: key, StatePath: statePath, Off: cats, Every: every, PanelBin: panel, Log: log,
			}
			if n, err := dbusnotify.Open("Meridian"); err == nil {
				defer n.Close()
				cfg.Notify = n
			} else {
				log.Warn("no notification service: notifications go to this log", "err", err)
			}
			var clients [][2]string
			for _, c := range clientsetup.Clients() {
				clients = append(clients, [2]string{c.Name, c.Title})
			}
			var runErr error
			tray.Run("Meridian", clients, func(t *tray.Tray) { runErr = desktop.Run(cmd.Context(), cfg, t) })
			return runErr
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&host, "host", "127.0.0.1", "the gateway's host")
	fs.IntVar(&port, "port", 3456, "the gateway's port")
	fs.StringVar(&key, "admin-key", os.Getenv("MERIDIAN_ADMIN_KEY"), "the gateway's admin key (MERIDIAN_ADMIN_KEY); a gateway the companion starts gets it too")
	fs.StringVar(&binary, "meridian", "", "the meridian binary to start when none serves (default: beside this one, else on PATH)")
	fs.StringVar(&panel, "panel", "", "the meridian-panel binary that shows the panel's window (default: beside this one, else on PATH; none: the browser)")
	fs.StringArrayVar(&serveArgs, "serve-arg", nil, "another flag for the meridian serve the companion starts (repeatable)")
	fs.StringVar(&statePath, "state", "", "where the notifications' cooldowns are kept (default $XDG_STATE_HOME/meridian-desktop/notices.json)")
	fs.StringVar(&off, "notify-off", "", "notification categories not shown, comma-separated: plan, accounts, budget, gateway (recovery is always shown)")
	fs.DurationVar(&every, "every", 5*time.Second, "how often the gateway is looked at")
	fs.BoolVar(&install, "install-autostart", false, "start the companion at login with these --host and --port, and exit")
	fs.BoolVar(&remove, "remove-autostart", false, "stop starting the companion at login, and exit")
	cmd.AddCommand(versionCommand())
	return cmd
}

// categories reads --notify-off.
func categories(s string) ([]notice.Category, error) {
	var out []notice.Category
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		c := notice.Category(f)
		if c == notice.Recovery {
			return nil, fmt.Errorf("--notify-off: recovery cannot be switched off (it says the gateway is down for good)")
		}
		known := false
		for _, k := range notice.Categories {
			known = known || k == c
		}
		if !known {
			return nil, fmt.Errorf("--notify-off: no category %q (plan, accounts, budget, gateway)", f)
		}
		out = append(out, c)
	}
	return out, nil
}

// beside finds a program beside the companion, else on PATH ("" for
// none: a missing panel opens in the browser, a missing meridian is said
// when it is needed).
func beside(self, name string) string {
	there := filepath.Join(filepath.Dir(self), name)
	if _, err := os.Stat(there); err == nil {
		return there
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	return ""
}

func defaultStatePath() string {
	base := os.Getenv("XDG_STATE_HOME")
	if base == "" {
		base = filepath.Join(os.Getenv("HOME"), ".local", "state")
	}
	return filepath.Join(base, "meridian-desktop", "notices.json")
}

func versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "print the companion's version",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintln(cmd.OutOrStdout(), "meridian-desktop", cmp.Or(releaseVersion, "dev"))
		},
	}
}
