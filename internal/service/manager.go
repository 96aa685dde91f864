package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/meridian-gw/meridian/internal/atomicfile"
)

// Manager is the user's service manager on this machine.
type Manager struct {
	GOOS string
	Home string
	Env  map[string]string // the caller's environment, passed to systemctl and launchctl
	UID  int
	User string
}

// State is what the manager says of the unit.
type State struct {
	Path      string
	Installed bool
	Running   bool   // the user's service manager answers
	Active    string // systemd: is-active; launchd: the agent's state
	Enabled   string // systemd: is-enabled
	Why       string // when the manager does not answer, what it said
}

// UnitPath is where the unit or agent is written.
func (m Manager) UnitPath() string {
	if m.GOOS == "darwin" {
		return filepath.Join(m.Home, "Library", "LaunchAgents", Label+".plist")
	}
	dir := m.Env["XDG_CONFIG_HOME"]
	if dir == "" {
		dir = filepath.Join(m.Home, ".config")
	}
	return filepath.Join(dir, "systemd", "user", Name)
}

// LogFile is where the launchd agent's output goes.
func (m Manager) LogFile() string { return filepath.Join(m.Home, "Library", "Logs", "meridian.log") }

// Install writes the unit and, when the user's manager runs, enables and
// starts it (restarting it when the unit changed). Without a running
// manager the unit is written and out says how to start it later.
func (m Manager) Install(ctx context.Context, u Unit, out io.Writer) error {
	if m.GOOS != "linux" && m.GOOS != "darwin" {
		return fmt.Errorf("meridian service knows systemd (Linux) and launchd (macOS), not %s", m.GOOS)
	}
	text := u.Systemd()
	if m.GOOS == "darwin" {
		text = u.Launchd()
	}
	path := m.UnitPath()
	mode := os.FileMode(0o644)
	if len(u.Secrets) > 0 {
		mode = 0o600
		if m.GOOS == "linux" {
			if err := os.MkdirAll(filepath.Dir(u.EnvFile), 0o700); err != nil {
				return err
			}
			if err := atomicfile.Write(u.EnvFile, []byte(u.EnvFileText()), 0o600); err != nil {
				return err
			}
		}
	}
	old, _ := os.ReadFile(path)
	changed := string(old) != text
	if changed {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := atomicfile.Write(path, []byte(text), mode); err != nil {
			return err
		}
		fmt.Fprintln(out, "wrote", path)
	} else {
		fmt.Fprintln(out, path, "is unchanged")
	}
	if m.GOOS == "darwin" {
		return m.launchdStart(ctx, path, out)
	}
	st := m.State(ctx)
	if !st.Running {
		fmt.Fprintf(out, "systemd is not running for this user (%s), so nothing was started.\n", st.Why)
		fmt.Fprintln(out, "Once it runs: systemctl --user daemon-reload && systemctl --user enable --now "+Name)
		return nil
	}
	if _, err := m.systemctl(ctx, "daemon-reload"); err != nil {
		return err
	}
	verb := "started"
	if _, err := m.systemctl(ctx, "enable", "--now", Name); err != nil {
		return err
	}
	if changed && st.Active == "active" {
		if _, err := m.systemctl(ctx, "restart", Name); err != nil {
			return err
		}
		verb = "restarted"
	}
	fmt.Fprintf(out, "%s enabled and %s; `meridian service logs` shows its output.\n", Name, verb)
	if m.User != "" {
		if _, err := os.Stat(filepath.Join("/var/lib/systemd/linger", m.User)); err != nil {
			fmt.Fprintf(out, "It runs while you are logged in. To keep it running after you log out: loginctl enable-linger %s\n", m.User)
		}
	}
	return nil
}

// Uninstall stops and disables the unit where the manager runs, and
// removes it and the environment file that held its key.
func (m Manager) Uninstall(ctx context.Context, envFile string, out io.Writer) error {
	path := m.UnitPath()
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		fmt.Fprintln(out, "no service is installed at", path)
		return nil
	}
	switch {
	case m.GOOS == "darwin":
		_, _ = m.run(ctx, "launchctl", "bootout", m.domain()+"/"+Label)
	case m.State(ctx).Running:
		if _, err := m.systemctl(ctx, "disable", "--now", Name); err != nil {
			return err
		}
	}
	if err := os.Remove(path); err != nil {
		return err
	}
	fmt.Fprintln(out, "removed", path)
	if envFile != "" {
		if err := os.Remove(envFile); err == nil {
			fmt.Fprintln(out, "removed", envFile)
		} else if !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	if m.GOOS == "linux" && m.State(ctx).Running {
		_, err := m.systemctl(ctx, "daemon-reload")
		return err
	}
	return nil
}

// State asks the manager about the unit; it never fails: what could not
// be learnt is said in Why.
func (m Manager) State(ctx context.Context) State {
	st := State{Path: m.UnitPath()}
	_, err := os.Stat(st.Path)
	st.Installed = err == nil
	if m.GOOS == "darwin" {
		out, err := m.run(ctx, "launchctl", "print", m.domain()+"/"+Label)
		st.Running = true
		if err != nil {
			st.Active = "not loaded"
			return st
		}
		for _, line := range strings.Split(out, "\n") {
			if k, v, ok := strings.Cut(strings.TrimSpace(line), " = "); ok && k == "state" {
				st.Active = v
			}
		}
		return st
	}
	// is-system-running prints the manager's state; anything but one of
	// these (offline, or no bus at all) means no user manager answers.
	out, err := m.systemctl(ctx, "is-system-running")
	switch state := strings.TrimSpace(out); {
	case errors.Is(err, exec.ErrNotFound):
		st.Why = "no systemctl on this machine"
		return st
	case state == "running", state == "degraded", state == "starting", state == "initializing", state == "maintenance", state == "stopping":
		st.Running = true
	case state == "":
		st.Why = "systemctl --user answered nothing"
		return st
	default:
		st.Why = "systemctl --user: " + firstLine(state)
		return st
	}
	active, _ := m.systemctl(ctx, "is-active", Name)
	enabled, _ := m.systemctl(ctx, "is-enabled", Name)
	st.Active, st.Enabled = firstLine(active), firstLine(enabled)
	return st
}

// Logs copies the service's recent output to out, following it with
// follow until ctx ends.
func (m Manager) Logs(ctx context.Context, follow bool, out io.Writer) error {
	if m.GOOS == "darwin" {
		args := []string{"-n", "200"}
		if follow {
			args = append(args, "-f")
		}
		return m.stream(ctx, out, "tail", append(args, m.LogFile())...)
	}
	if st := m.State(ctx); !st.Running {
		return fmt.Errorf("systemd is not running for this user (%s): there is no journal to read", st.Why)
	}
	args := []string{"--user", "-u", Name, "-n", "200", "--no-pager"}
	if follow {
		args = append(args, "-f")
	}
	return m.stream(ctx, out, "journalctl", args...)
}

func (m Manager) domain() string { return "gui/" + strconv.Itoa(m.UID) }

func (m Manager) launchdStart(ctx context.Context, path string, out io.Writer) error {
	if err := os.MkdirAll(filepath.Dir(m.LogFile()), 0o755); err != nil {
		return err
	}
	_, _ = m.run(ctx, "launchctl", "bootout", m.domain()+"/"+Label)
	if _, err := m.run(ctx, "launchctl", "bootstrap", m.domain(), path); err != nil {
		return err
	}
	fmt.Fprintf(out, "%s loaded; it starts at login and now. Its output goes to %s.\n", Label, m.LogFile())
	return nil
}

func (m Manager) systemctl(ctx context.Context, args ...string) (string, error) {
	return m.run(ctx, "systemctl", append([]string{"--user"}, args...)...)
}

// run runs a manager command to its end and returns what it printed.
func (m Manager) run(ctx context.Context, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = m.environ()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, firstLine(string(out)))
	}
	return string(out), nil
}

func (m Manager) stream(ctx context.Context, out io.Writer, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = m.environ()
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Run(); err != nil && ctx.Err() == nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

func (m Manager) environ() []string {
	env := make([]string, 0, len(m.Env))
	for k, v := range m.Env {
		env = append(env, k+"="+v)
	}
	return env
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
