package e2e

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/meridian-gw/meridian/internal/procgroup"
	"github.com/meridian-gw/meridian/internal/testkit"
)

// companionProc is meridian-desktop running in a test's desktop session,
// read the way the panel reads it: over D-Bus.
type companionProc struct {
	t   *testing.T
	cmd *exec.Cmd
	log testkit.Log
	bus *dbus.Conn
	d   *testkit.Desktop
}

// buildDesktop builds meridian-desktop, and beside it meridian-panel
// with its web view, where the companion finds it.
func buildDesktop(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, b := range [][]string{{"meridian-desktop"}, {"meridian-panel", "-tags", "webkit"}} {
		cmd := exec.Command("go", append(append([]string{"build"}, b[1:]...), "-o", filepath.Join(dir, b[0]), "./cmd/"+b[0])...)
		cmd.Dir = testkit.RepoRoot(t)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", b[0], err, out)
		}
	}
	return filepath.Join(dir, "meridian-desktop")
}

func startCompanion(t *testing.T, d *testkit.Desktop, bin string, env []string, args ...string) *companionProc {
	t.Helper()
	c := &companionProc{t: t, d: d, cmd: exec.Command(bin, append([]string{"--every", "1s", "--meridian", meridianBin}, args...)...)}
	c.cmd.Env = env
	c.cmd.Stdout, c.cmd.Stderr = &c.log, &c.log
	// Its own group, so that a failed test ends whatever it started.
	procgroup.Prepare(c.cmd)
	c.cmd.WaitDelay = 10 * time.Second
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if c.cmd.ProcessState == nil {
			_ = procgroup.SignalGroup(c.cmd.Process.Pid, syscall.SIGKILL)
			_ = c.cmd.Wait()
		}
		if t.Failed() {
			t.Logf("the companion's log:\n%s", c.log.String())
		}
	})
	bus, err := dbus.Connect(d.Bus)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bus.Close() })
	c.bus = bus
	// The icon appears: the panel's tray host lists the companion's item.
	waitTrue(t, 30*time.Second, "the companion's icon in the panel's tray", func() bool {
		var owner string
		if err := bus.BusObject().Call("org.freedesktop.DBus.GetNameOwner", 0, c.name()).Store(&owner); err != nil {
			return false
		}
		v, err := bus.Object("org.kde.StatusNotifierWatcher", "/StatusNotifierWatcher").GetProperty("org.kde.StatusNotifierWatcher.RegisteredStatusNotifierItems")
		items, _ := v.Value().([]string)
		return err == nil && slices.Contains(items, owner+"/StatusNotifierItem")
	})
	return c
}

// name is the companion's item on the bus (the tray library's naming).
func (c *companionProc) name() string {
	return fmt.Sprintf("org.kde.StatusNotifierItem-%d-1", c.cmd.Process.Pid)
}

// tooltip is the icon's tooltip as the tray host reads it.
func (c *companionProc) tooltip() string {
	v, err := c.bus.Object(c.name(), "/StatusNotifierItem").GetProperty("org.kde.StatusNotifierItem.ToolTip")
	if err != nil {
		return ""
	}
	var tip struct {
		Icon   string
		Pixmap []struct {
			W, H int32
			Data []byte
		}
		Title, Text string
	}
	if err := dbus.Store([]any{v.Value()}, &tip); err != nil {
		c.t.Fatalf("the tooltip's shape: %v", err)
	}
	return tip.Title
}

// waitTooltip waits until the tooltip holds every part.
func (c *companionProc) waitTooltip(parts ...string) string {
	c.t.Helper()
	var tip string
	waitTrue(c.t, 30*time.Second, fmt.Sprintf("a tooltip with %q", parts), func() bool {
		tip = c.tooltip()
		for _, p := range parts {
			if !strings.Contains(tip, p) {
				return false
			}
		}
		return true
	})
	return tip
}

// menuItem is one item of the icon's menu (dbusmenu's layout).
type menuItem struct {
	ID       int32
	Props    map[string]dbus.Variant
	Children []dbus.Variant
}

// menu reads the menu over D-Bus: each visible item's label and id.
func (c *companionProc) menu() map[string]int32 {
	c.t.Helper()
	var revision uint32
	var root menuItem
	if err := c.bus.Object(c.name(), "/StatusNotifierItem/menu").Call("com.canonical.dbusmenu.GetLayout", 0, int32(0), int32(-1), []string{}).
		Store(&revision, &root); err != nil {
		c.t.Fatalf("GetLayout: %v", err)
	}
	labels := map[string]int32{}
	var walk func(m menuItem)
	walk = func(m menuItem) {
		label, _ := m.Props["label"].Value().(string)
		visible, set := m.Props["visible"].Value().(bool)
		if label != "" && (!set || visible) {
			labels[label] = m.ID
		}
		for _, ch := range m.Children {
			var sub menuItem
			if err := dbus.Store([]any{ch.Value()}, &sub); err != nil {
				c.t.Fatalf("a menu item's shape: %v", err)
			}
			walk(sub)
		}
	}
	walk(root)
	return labels
}

// click clicks a menu item as the tray host does.
func (c *companionProc) click(label string) {
	c.t.Helper()
	id, ok := c.menu()[label]
	if !ok {
		c.t.Fatalf("no menu item %q in %v", label, c.menu())
	}
	if err := c.bus.Object(c.name(), "/StatusNotifierItem/menu").Call("com.canonical.dbusmenu.Event", 0, id, "clicked",
		dbus.MakeVariant(int32(0)), uint32(time.Now().Unix())).Err; err != nil {
		c.t.Fatalf("click %s: %v", label, err)
	}
}

// quit chooses Quit and waits for the companion to exit.
func (c *companionProc) quit(within time.Duration) {
	c.t.Helper()
	c.click("Quit")
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			c.t.Fatalf("the companion exited with %v:\n%s", err, c.log.String())
		}
	case <-time.After(within):
		c.t.Fatalf("the companion did not exit within %s of Quit", within)
	}
}

// children are the companion's child processes' command lines.
func (c *companionProc) children() map[int]string {
	out := map[int]string{}
	// Each thread lists the children it started.
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", c.cmd.Process.Pid))
	var all []string
	for _, task := range tasks {
		b, _ := os.ReadFile(task)
		all = append(all, strings.Fields(string(b))...)
	}
	for _, f := range all {
		pid, _ := strconv.Atoi(f)
		argv, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		out[pid] = strings.ReplaceAll(strings.TrimRight(string(argv), "\x00"), "\x00", " ")
	}
	return out
}

// servePID is the companion's own meridian serve (0: none).
func (c *companionProc) servePID() int {
	for pid, argv := range c.children() {
		if strings.Contains(argv, " serve ") {
			return pid
		}
	}
	return 0
}

func answers(url string) bool {
	c := http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(url + "/health")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return true
}

// summaries are the notifications' titles.
func summaries(list []testkit.Notification) []string {
	var out []string
	for _, n := range list {
		out = append(out, n.Summary)
	}
	return out
}

// withDesktop is env with the desktop session's display and bus, and
// the companion's state and autostart under dir.
func withDesktop(env []string, d *testkit.Desktop, dir string) []string {
	return append(slices.Clone(env), "DISPLAY="+d.Display, "DBUS_SESSION_BUS_ADDRESS="+d.Bus, "XDG_STATE_HOME="+filepath.Join(dir, "state"),
		"XDG_CONFIG_HOME="+filepath.Join(dir, "config"), "WEBKIT_DISABLE_COMPOSITING_MODE=1", "NO_AT_BRIDGE=1")
}
