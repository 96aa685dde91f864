package desktop

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/glance"
	"github.com/meridian-gw/meridian/internal/keeper"
	"github.com/meridian-gw/meridian/internal/testkit"
	"github.com/meridian-gw/meridian/internal/tray"
)

var meridianBin string

func TestMain(m *testing.M) { os.Exit(testkit.RunWithMeridian(m, &meridianBin)) }

// fakeUI records what the companion shows and clicks for it.
type fakeUI struct {
	clicks chan tray.Click
	mu     sync.Mutex
	shown  glance.Glance
	names  []string
	def    string
}

func (u *fakeUI) Show(g glance.Glance) { u.mu.Lock(); u.shown = g; u.mu.Unlock() }
func (u *fakeUI) SetProfiles(names []string, def string) {
	u.mu.Lock()
	u.names, u.def = names, def
	u.mu.Unlock()
}
func (u *fakeUI) Clicks() <-chan tray.Click { return u.clicks }
func (u *fakeUI) level() glance.Level       { u.mu.Lock(); defer u.mu.Unlock(); return u.shown.Level }

// told records the notifications shown.
type told struct {
	mu    sync.Mutex
	notes []string
}

func (n *told) Show(_ context.Context, title, body string, critical bool) (uint32, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.notes = append(n.notes, title)
	return uint32(len(n.notes)), nil
}

func (n *told) all() []string            { n.mu.Lock(); defer n.mu.Unlock(); return slices.Clone(n.notes) }
func (u *fakeUI) defaultProfile() string { u.mu.Lock(); defer u.mu.Unlock(); return u.def }

// The menu's actions against a real gateway the companion attached to:
// pause takes it out of serving and resume back, a profile click makes it
// the default, the panel is opened signed in with a session cookie (not
// the key), a copy puts that client's setup command on the clipboard, and
// Quit ends the companion with the gateway still serving; a gateway it
// attached to that stops answering is told once, and shown down.
func TestTheMenusActions(t *testing.T) {
	const key = "desk-SECRET"
	cmd, addr, _ := testkit.ServeMeridian(t, meridianBin, "--admin-key", key, "--claude-path", "/nonexistent/claude")
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	admin := func(method, path, body string) int {
		req, _ := http.NewRequest(method, "http://"+addr+path, strings.NewReader(body))
		req.Header.Set("X-Api-Key", key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := admin(http.MethodPost, "/v1/admin/profiles", `{"name":"second","kind":"api","secret":"sk-ant-api-second-SECRET"}`); code != http.StatusCreated {
		t.Fatalf("add a profile: %d", code)
	}
	ui := &fakeUI{clicks: make(chan tray.Click)}
	notes := &told{}
	var mu sync.Mutex
	var cookies, copied []string
	cfg := Config{Keeper: keeper.Config{Addr: addr, Binary: meridianBin}, Key: key, StatePath: filepath.Join(t.TempDir(), "notices.json"),
		Every: 200 * time.Millisecond,
		Panel: func(ctx context.Context, origin, cookie string) error {
			mu.Lock()
			cookies = append(cookies, cookie)
			mu.Unlock()
			<-ctx.Done() // open until the companion closes it
			return nil
		},
		Open:   func(string) error { return nil },
		Copy:   func(text string) error { mu.Lock(); copied = append(copied, text); mu.Unlock(); return nil },
		Notify: notes,
	}
	done := make(chan error, 1)
	go func() { done <- Run(context.Background(), cfg, ui) }()
	wait := func(what string, cond func() bool) {
		t.Helper()
		if err := testkit.WaitFor(10*time.Second, func() error {
			if !cond() {
				return &waiting{what}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	wait("the first look", func() bool { return ui.level() != "" && ui.defaultProfile() == "default" })
	ui.clicks <- tray.Click{Kind: tray.Pause}
	wait("paused", func() bool { return ui.level() == glance.Paused })
	var health struct{ Paused bool }
	resp, err := http.Get("http://" + addr + "/health")
	if err != nil {
		t.Fatal(err)
	}
	_ = json.NewDecoder(resp.Body).Decode(&health)
	resp.Body.Close()
	if !health.Paused {
		t.Fatal("the gateway's health does not say paused")
	}
	ui.clicks <- tray.Click{Kind: tray.Pause}
	wait("resumed", func() bool { return ui.level() != glance.Paused })
	ui.clicks <- tray.Click{Kind: tray.Profile, Arg: "second"}
	wait("second the default", func() bool { return ui.defaultProfile() == "second" })
	ui.clicks <- tray.Click{Kind: tray.OpenPanel}
	ui.clicks <- tray.Click{Kind: tray.OpenPanel} // open already: not a second window
	ui.clicks <- tray.Click{Kind: tray.Copy, Arg: "pi"}
	wait("the copy", func() bool { mu.Lock(); defer mu.Unlock(); return len(copied) == 1 })
	if code, _ := testkit.Get(t, "http://"+addr+"/ready"); code != http.StatusOK {
		t.Fatalf("the gateway while the companion runs: ready %d", code)
	}
	ui.clicks <- tray.Click{Kind: tray.Quit}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if code, _ := testkit.Get(t, "http://"+addr+"/ready"); code != http.StatusOK {
		t.Fatalf("the gateway after the companion quit: ready %d", code)
	}

	// Attached again, the gateway stops: told once, shown down.
	go func() { done <- Run(context.Background(), cfg, ui) }()
	ui.Show(glance.Glance{}) // what the first run showed is gone
	wait("attached again", func() bool {
		select {
		case err := <-done:
			t.Fatalf("the companion ended: %v", err)
		default:
		}
		return ui.level() != ""
	})
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	wait("shown down", func() bool { return ui.level() == glance.Down })
	wait("told", func() bool { return len(notes.all()) == 1 })
	time.Sleep(2 * time.Second) // more looks, nothing more to tell
	if got := notes.all(); len(got) != 1 || got[0] != "Meridian is down" {
		t.Fatalf("notifications %q", got)
	}
	ui.clicks <- tray.Click{Kind: tray.Quit}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(cookies) != 1 || !strings.HasPrefix(cookies[0], "meridian_session=") || strings.Contains(cookies[0], key) {
		t.Fatalf("the panel was opened with %q", cookies)
	}
	_, port, _ := strings.Cut(addr, ":")
	if want := "meridian setup pi --port " + port; copied[0] != want {
		t.Fatalf("copied %q, want %q", copied[0], want)
	}
}

type waiting struct{ what string }

func (w *waiting) Error() string { return "waiting for " + w.what }

// Autostart writes an entry that starts the companion with its flags, on
// Linux and macOS, and removes it.
func TestAutostart(t *testing.T) {
	home := t.TempDir()
	linux := Autostart{Home: home, GOOS: "linux"}
	if err := linux.Install([]string{"/opt/meridian dir/meridian-desktop", "--port", "3999"}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(home, ".config", "autostart", "meridian-desktop.desktop"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "Exec=\"/opt/meridian dir/meridian-desktop\" --port 3999\n") || !strings.HasPrefix(string(b), "[Desktop Entry]\n") {
		t.Fatalf("the entry:\n%s", b)
	}
	if err := linux.Install([]string{"meridian-desktop"}); err == nil {
		t.Fatal("a relative path was written into the autostart entry")
	}
	mac := Autostart{Home: home, GOOS: "darwin"}
	if err := mac.Install([]string{"/Applications/Meridian/meridian-desktop", "--host", "127.0.0.1"}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(mac.Path()); !strings.Contains(string(b), "<string>/Applications/Meridian/meridian-desktop</string>") || !strings.Contains(string(b), "<key>RunAtLoad</key><true/>") {
		t.Fatalf("the launch agent:\n%s", b)
	}
	for _, a := range []Autostart{linux, mac} {
		if err := a.Remove(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(a.Path()); !os.IsNotExist(err) {
			t.Fatalf("%s still there", a.Path())
		}
		if err := a.Remove(); err != nil {
			t.Fatalf("removing what is gone: %v", err)
		}
	}
	if got := desktopQuote(`50% off "now" $HOME`); got != `"50%% off \\"now\\" \\$HOME"` {
		t.Fatalf("quoted %s", got)
	}
}
