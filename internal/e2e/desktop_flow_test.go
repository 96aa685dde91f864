package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/store"
	"github.com/meridian-gw/meridian/internal/store/sqlite/sqlitetest"
	"github.com/meridian-gw/meridian/internal/testkit"
)

// The desktop companion in a real desktop session (Xvfb, xfce4-panel's
// tray host, dunst, a D-Bus session bus of the test's own), against the
// real meridian and claude: attached to a gateway a supervisor started,
// then owning its own.
func TestDesktop(t *testing.T) {
	t.Parallel()
	d := testkit.StartDesktop(t)
	bin := buildDesktop(t)
	t.Run("attached", func(t *testing.T) { desktopAttached(t, d, bin) })
	t.Run("owned", func(t *testing.T) { desktopOwned(t, d, bin) })
}

// Attached to a gateway serving two profiles: the icon's tooltip says it,
// the menu is read and opens the panel (screenshot kept), a profile
// pushed over 80 % and then benched gives exactly two notifications, a
// burst of 10 alerts one, a restarted companion repeats none, the copied
// setup command configures its client, and quit leaves the gateway
// serving.
func desktopAttached(t *testing.T, d *testkit.Desktop, bin string) {
	g := newGateway(t)
	reset := time.Now().Add(3 * time.Hour)
	accounts := &plans{by: map[string]*plan{
		"alpha": {token: "sk-ant-oat-alpha-SECRET", used: 0.35, reset: reset, reported: -1},
		"beta":  {token: "sk-ant-oat-beta-SECRET", used: 0.55, reset: reset.Add(time.Hour), reported: -1},
	}}
	var refuseBeta atomic.Bool
	g.up.Respond(func(r testkit.Request) testkit.Reply {
		if refuseBeta.Load() && r.Header.Get("Authorization") == "Bearer "+accounts.by["beta"].token {
			at := fmt.Sprint(reset.Unix())
			return testkit.Reply{Status: http.StatusTooManyRequests, ErrorType: "rate_limit_error", ErrorMessage: "rate limited",
				Headers: map[string]string{"anthropic-ratelimit-unified-status": "rejected", "anthropic-ratelimit-unified-reset": at,
					"anthropic-ratelimit-unified-5h-status": "rejected", "anthropic-ratelimit-unified-5h-reset": at,
					"anthropic-ratelimit-unified-5h-utilization": "1.0", "anthropic-ratelimit-unified-representative-claim": "five_hour"}}
		}
		return accounts.respond(r)
	})
	wrapper := accounts.tokenProfiles(t, g)
	g.env = append(g.env, "MERIDIAN_ADMIN_KEY="+adminKey)
	// Started as a supervisor would: not the companion's.
	g.start("--claude-path", wrapper, "--spares", "0")
	_, port, _ := strings.Cut(strings.TrimPrefix(g.url, "http://127.0.0.1"), ":")
	turn := func(profile, text string) int {
		t.Helper()
		resp, body, err := g.post(prompt(text), "X-Api-Key", adminKey, "X-Meridian-Profile", profile, "X-Claude-Code-Session-Id", text)
		if err != nil {
			t.Fatalf("%s on %s: %v %s", text, profile, err, body)
		}
		return resp.StatusCode
	}
	for _, p := range []string{"alpha", "beta"} {
		if code := turn(p, "first on "+p); code != http.StatusOK {
			t.Fatalf("first on %s: %d", p, code)
		}
	}
	before := len(d.Notifications(t))
	told := func() []testkit.Notification { return d.Notifications(t)[before:] }
	home := t.TempDir()
	env := withDesktop(os.Environ(), d, home)
	args := []string{"--port", port, "--admin-key", adminKey}
	c := startCompanion(t, d, bin, env, args...)
	tip := c.waitTooltip("Meridian: serving", "2 live", "beta 5h 55%")
	t.Logf("tooltip: %s", tip)
	menu := c.menu()
	for _, want := range []string{"Open the panel", "Open the pages", "Pause serving", "Default profile", "alpha", "beta", "Copy a setup command", "OpenCode", "Quit"} {
		if _, ok := menu[want]; !ok {
			t.Fatalf("the menu has no %q: %v", want, menu)
		}
	}

	// The panel: a window of its own, signed in with the companion's key.
	c.click("Open the panel")
	waitTrue(t, 30*time.Second, "the panel window", func() bool { return len(d.Windows("Meridian")) == 1 })
	waitTrue(t, 30*time.Second, "the panel page served to the window", func() bool { return g.logShows("path=/panel status=200") })
	time.Sleep(2 * time.Second) // drawn
	shot := filepath.Join(testkit.RepoRoot(t), ".artifacts", "pages", "desktop-panel.png")
	d.Screenshot(t, shot)
	for pid, argv := range c.children() {
		if strings.Contains(argv, "serve") {
			t.Fatalf("attached, the companion started a meridian of its own: %d %s", pid, argv)
		}
	}

	// Over 80 %, then benched: two notifications, told apart.
	accounts.set("beta", 0.85, 0)
	if code := turn("beta", "beta over 80"); code != http.StatusOK {
		t.Fatalf("beta over 80: %d", code)
	}
	waitTrue(t, 30*time.Second, "the 80 % notification", func() bool { return len(told()) == 1 })
	refuseBeta.Store(true)
	turn("beta", "beta refused")
	waitTrue(t, 30*time.Second, "the benched notification", func() bool { return len(told()) == 2 })
	time.Sleep(4 * time.Second) // looks go on: nothing more to tell
	if got := told(); len(got) != 2 || !strings.Contains(got[0].Summary, "beta") || !strings.Contains(got[1].Summary+got[1].Body, "bench") {
		t.Fatalf("notifications %+v, want beta's 80 %% window then its bench", got)
	}

	// A burst of 10 alerts within 2 s: one notification.
	st := sqlitetest.OpenIn(t, g.dataDir)
	for i := range 10 {
		if _, err := st.Alerts.Claim(context.Background(), store.SentAlert{Key: fmt.Sprintf("burst-%d", i), Kind: "logged_out",
			Profile: fmt.Sprintf("p%d", i), Message: fmt.Sprintf("profile p%d is logged out", i), Host: "test", At: time.Now()}, time.Hour); err != nil {
			t.Fatal(err)
		}
		time.Sleep(150 * time.Millisecond)
	}
	waitTrue(t, 30*time.Second, "the burst's notification", func() bool { return len(told()) == 3 })
	time.Sleep(4 * time.Second)
	if got := told(); len(got) != 3 || !strings.Contains(got[2].Summary, "10") {
		t.Fatalf("after the burst: %q, want one note saying ten", summaries(got))
	}

	// The setup builder's command, copied from the menu and run as printed.
	c.click("OpenCode")
	var copied string
	waitTrue(t, 10*time.Second, "the copied command", func() bool {
		var err error
		copied, err = d.Clipboard()
		return err == nil && strings.HasPrefix(copied, "meridian setup opencode")
	})
	setupHome := t.TempDir()
	argv := strings.Fields(copied)
	setup := exec.Command(g.bin, append(argv[1:], "--dry-run")...)
	setup.Env = append(os.Environ(), "HOME="+setupHome, "XDG_CONFIG_HOME="+filepath.Join(setupHome, ".config"), "MERIDIAN_API_KEY="+adminKey)
	out, err := setup.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "127.0.0.1:"+port) {
		t.Fatalf("%s --dry-run: %v\n%s", copied, err, out)
	}

	// Restarted inside the cooldowns: nothing told again.
	c.quit(30 * time.Second)
	if len(d.Windows("Meridian")) != 0 {
		t.Fatal("the panel window outlived the companion")
	}
	if !answers(g.url) {
		t.Fatal("quitting the companion stopped the gateway it did not start")
	}
	c = startCompanion(t, d, bin, env, args...)
	c.waitTooltip("beta 5h")
	time.Sleep(5 * time.Second)
	if got := told(); len(got) != 3 {
		t.Fatalf("a restarted companion told again: %q", summaries(got))
	}
	c.quit(30 * time.Second)
	if !answers(g.url) {
		t.Fatal("the gateway stopped with the companion")
	}
	// The companion's looks, each second here, stay out of the gateway's log.
	if n := strings.Count(g.log.String(), "agent=meridian-desktop"); n != 0 {
		t.Fatalf("the gateway logged %d of the companion's looks", n)
	}
}

// Owning its gateway: a child killed with kill -9 is restarted on the
// same port three times, then a critical notification and no fourth
// start; a new companion's quit drains its child (the running turn
// completes) and leaves nothing running.
func desktopOwned(t *testing.T, d *testkit.Desktop, bin string) {
	g := newGateway(t) // its upstream, CLI environment and data dir; the companion runs meridian
	before := len(d.Notifications(t))
	_, port, _ := net.SplitHostPort(testkit.FreeAddr(t))
	url := "http://127.0.0.1:" + port
	env := withDesktop(g.env, d, t.TempDir())
	args := []string{"--port", port, "--serve-arg=--data-dir=" + g.dataDir, "--serve-arg=--claude-path=" + testkit.ClaudePath(t),
		"--serve-arg=--spares=0"}
	c := startCompanion(t, d, bin, env, args...)
	var pid int
	waitTrue(t, 60*time.Second, "the companion's own meridian serving", func() bool {
		pid = c.servePID()
		return pid != 0 && answers(url) && strings.Contains(c.log.String(), "started the gateway")
	})
	for i := range 3 {
		testkit.Kill(pid)
		old := pid
		waitTrue(t, 60*time.Second, fmt.Sprintf("restart %d", i+1), func() bool {
			pid = c.servePID()
			return pid != 0 && pid != old && answers(url) && strings.Count(c.log.String(), "the gateway was restarted") == i+1
		})
	}
	testkit.Kill(pid)
	var critical testkit.Notification
	defer func() {
		if t.Failed() {
			t.Logf("notifications: %+v", d.Notifications(t)[before:])
		}
	}()
	waitTrue(t, 30*time.Second, "the critical notification", func() bool {
		for _, n := range d.Notifications(t)[before:] {
			if n.Urgency == "critical" {
				critical = n
				return true
			}
		}
		return false
	})
	if !strings.Contains(critical.Summary, "down") {
		t.Fatalf("the critical notification: %+v", critical)
	}
	c.waitTooltip("Meridian: down")
	time.Sleep(3 * time.Second)
	if c.servePID() != 0 || answers(url) {
		t.Fatalf("a fourth start after the bound: children %v", c.children())
	}
	c.quit(30 * time.Second)

	// Quit drains: a running turn completes before the child exits.
	c = startCompanion(t, d, bin, env, args...)
	var child int
	waitTrue(t, 60*time.Second, "the new companion's meridian serving", func() bool {
		child = c.servePID()
		return child != 0 && answers(url) && strings.Contains(c.log.String(), "started the gateway")
	})
	g.url = url
	g.up.Respond(func(testkit.Request) testkit.Reply {
		return testkit.Reply{Text: "finished in the drain", Delay: 3 * time.Second}
	})
	result := make(chan string, 1)
	go func() {
		resp, body, err := g.post(prompt("a slow turn"), "X-Claude-Code-Session-Id", "drain-1")
		if err != nil {
			result <- err.Error()
			return
		}
		result <- fmt.Sprint(resp.StatusCode, " ", body)
	}()
	waitUpstreamHas(t, g.up, "a slow turn")
	c.quit(60 * time.Second)
	if got := <-result; !strings.HasPrefix(got, "200 ") || !strings.Contains(got, "finished in the drain") {
		t.Fatalf("the turn running at quit: %s", got)
	}
	if testkit.Alive(child) || answers(url) {
		t.Fatalf("the drained child %d is still there", child)
	}
}
