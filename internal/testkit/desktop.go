package testkit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/procgroup"
)

// Desktop is a desktop session of the test's own: an X server (Xvfb), a
// D-Bus session bus, a panel that hosts tray icons (xfce4-panel, whose
// systray plugin is a StatusNotifierItem host) and a notification daemon
// (dunst), all in a temporary home, all stopped and joined at cleanup.
type Desktop struct {
	Display, Bus, Home string
	procs              []*exec.Cmd
}

// StartDesktop starts a desktop session. Without its programs the test
// is skipped, except under CI, where that fails the run.
func StartDesktop(t testing.TB) *Desktop {
	t.Helper()
	// What a session runs (scripts/install-packages installs them).
	for _, p := range []string{"Xvfb", "dbus-daemon", "xfce4-panel", "dunst", "dunstctl", "ffmpeg", "xdotool", "dbus-send", "xclip"} {
		if _, err := exec.LookPath(p); err != nil {
			Missing(t, p+" not found (./scripts/install-packages installs the desktop test's programs)", "the desktop test")
		}
	}
	dir := t.TempDir()
	d := &Desktop{Home: filepath.Join(dir, "home"), Bus: "unix:path=" + filepath.Join(dir, "bus")}
	for _, sub := range []string{"home", "run"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(d.stop)
	// A display number no other test's server holds: its lock file says.
	for n := 90 + os.Getpid()%50; ; n++ {
		if _, err := os.Stat(fmt.Sprintf("/tmp/.X%d-lock", n)); os.IsNotExist(err) {
			d.Display = ":" + strconv.Itoa(n)
			break
		}
	}
	env := d.Env(filepath.Join(dir, "run"))
	d.start(t, env, "Xvfb", d.Display, "-screen", "0", "1280x800x24", "-nolisten", "tcp")
	d.start(t, env, "dbus-daemon", "--session", "--nofork", "--address="+d.Bus)
	if err := WaitFor(Scale(15*time.Second), func() error {
		if _, err := d.run("xdotool", "getdisplaygeometry"); err != nil {
			return fmt.Errorf("the X server on %s: %w", d.Display, err)
		}
		return d.busHas("org.freedesktop.DBus")
	}); err != nil {
		t.Fatal(err)
	}
	// The panel checks for a window manager for a few seconds; there is none.
	d.start(t, env, "xfce4-panel", "--disable-wm-check")
	// dunst keeps 20 notifications by default (a test counts more), and
	// its history does not say a notification's urgency: a rule puts it
	// in the category the history does show.
	rc := filepath.Join(dir, "dunstrc")
	conf := "[global]\n    history_length = 200\n"
	for _, u := range []string{"low", "normal", "critical"} {
		conf += fmt.Sprintf("[urgency-%[1]s]\n    msg_urgency = %[1]s\n    set_category = urgency-%[1]s\n", u)
	}
	if err := os.WriteFile(rc, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	d.start(t, env, "dunst", "-config", rc)
	if err := WaitFor(Scale(30*time.Second), func() error {
		if err := d.busHas("org.kde.StatusNotifierWatcher"); err != nil {
			return err
		}
		return d.busHas("org.freedesktop.Notifications")
	}); err != nil {
		t.Fatalf("the panel's tray host or the notification daemon did not come: %v", err)
	}
	return d
}

// Env is the session's environment for a program run in it.
func (d *Desktop) Env(runtimeDir string) []string {
	env := []string{"DISPLAY=" + d.Display, "DBUS_SESSION_BUS_ADDRESS=" + d.Bus, "HOME=" + d.Home,
		"XDG_CONFIG_HOME=" + filepath.Join(d.Home, ".config"), "XDG_STATE_HOME=" + filepath.Join(d.Home, ".local", "state"),
		"XDG_DATA_HOME=" + filepath.Join(d.Home, ".local", "share"), "WEBKIT_DISABLE_COMPOSITING_MODE=1", "NO_AT_BRIDGE=1"}
	if runtimeDir != "" {
		env = append(env, "XDG_RUNTIME_DIR="+runtimeDir)
	}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "PATH", "LANG", "TMPDIR", "GOCACHE", "GOPATH", "GOMODCACHE":
			env = append(env, kv)
		}
	}
	return env
}

func (d *Desktop) start(t testing.TB, env []string, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = env
	procgroup.Prepare(cmd)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	d.procs = append(d.procs, cmd)
}

func (d *Desktop) stop() {
	for i := len(d.procs) - 1; i >= 0; i-- {
		cmd := d.procs[i]
		_ = procgroup.SignalGroup(cmd.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = procgroup.SignalGroup(cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}
}

// run runs a program in the session and returns its output.
func (d *Desktop) run(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = d.Env("")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

func (d *Desktop) busHas(name string) error {
	out, err := d.run("dbus-send", "--session", "--print-reply", "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus",
		"org.freedesktop.DBus.NameHasOwner", "string:"+name)
	if err != nil {
		return err
	}
	if !strings.Contains(out, "boolean true") {
		return fmt.Errorf("nothing owns %s on the session bus yet", name)
	}
	return nil
}

// Notification is one notification the daemon showed; Urgency is the
// one the daemon took it with (low, normal, critical).
type Notification struct {
	Summary, Body, Urgency, App string
}

// Notifications are every notification the daemon showed, oldest first
// (those on screen are closed into its history first; it has no way to
// empty the history, so a test counts from what was there before).
func (d *Desktop) Notifications(t testing.TB) []Notification {
	t.Helper()
	// What is on screen joins the history once closed.
	if _, err := d.run("dunstctl", "close-all"); err != nil {
		t.Fatal(err)
	}
	out, err := d.run("dunstctl", "history")
	if err != nil {
		t.Fatal(err)
	}
	var h struct {
		Data [][]map[string]struct {
			Data any `json:"data"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(out), &h); err != nil {
		t.Fatalf("dunstctl history: %v: %s", err, out)
	}
	var list []Notification
	if len(h.Data) > 0 {
		for _, n := range h.Data[0] {
			s := func(k string) string { v, _ := n[k].Data.(string); return v }
			list = append(list, Notification{Summary: s("summary"), Body: s("body"),
				Urgency: strings.TrimPrefix(s("category"), "urgency-"), App: s("appname")})
		}
	}
	// dunst lists the newest first.
	for i, j := 0, len(list)-1; i < j; i, j = i+1, j-1 {
		list[i], list[j] = list[j], list[i]
	}
	return list
}

// Clipboard is the text on the session's clipboard (xclip).
func (d *Desktop) Clipboard() (string, error) {
	out, err := d.run("xclip", "-o", "-selection", "clipboard")
	return strings.TrimSpace(out), err
}

// Screenshot saves the screen as a PNG (ffmpeg's X11 grab).
func (d *Desktop) Screenshot(t testing.TB, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := d.run("ffmpeg", "-loglevel", "error", "-y", "-f", "x11grab", "-video_size", "1280x800", "-i", d.Display,
		"-frames:v", "1", path); err != nil {
		t.Fatal(err)
	}
}

// Windows are the ids of the visible windows whose title is name.
func (d *Desktop) Windows(name string) []string {
	out, err := d.run("xdotool", "search", "--onlyvisible", "--name", "^"+name+"$")
	if err != nil {
		return nil
	}
	return strings.Fields(out)
}
