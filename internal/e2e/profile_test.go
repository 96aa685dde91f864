package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/meridian-gw/meridian/internal/cluster"
	"github.com/meridian-gw/meridian/internal/profile"
	"github.com/meridian-gw/meridian/internal/session"
	"github.com/meridian-gw/meridian/internal/store/sqlite"
	"github.com/meridian-gw/meridian/internal/store/sqlstore"
	"github.com/meridian-gw/meridian/internal/testkit"
)

// profileCLI runs `meridian profile …` on a data dir, stdin given.
type profileCLI struct {
	t       *testing.T
	bin     string
	dataDir string
	env     []string
}

func (p profileCLI) run(stdin string, args ...string) (string, int) {
	p.t.Helper()
	cmd := exec.Command(p.bin, append(append([]string{"profile"}, args...), "--data-dir", p.dataDir, "--claude-path", testkit.ClaudePath(p.t))...)
	cmd.Env = p.env
	cmd.Stdin = strings.NewReader(stdin)
	return combined(p.t, cmd)
}

// `meridian profile` through the binary: secrets from stdin into 0600
// files, never in list output; default; remove, refused while a turn
// holds the profile.
func TestProfileCommands(t *testing.T) {
	t.Parallel()
	p := profileCLI{t: t, bin: buildBinary(t), dataDir: t.TempDir(),
		env: []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir()}}
	const keyA, tokenB = "sk-ant-test-SECRET-A", "sk-ant-oat-SECRET-B"
	up := testkit.NewUpstream(t) // the CLI reaches no network: its account endpoints are this
	if out, code := p.run(keyA+"\n", "add", "work", "--kind", "api", "--priority", "1", "--base-url", up.URL); code != 0 || !strings.Contains(out, "added profile work") {
		t.Fatalf("add work: %d %s", code, out)
	}
	if out, code := p.run(tokenB, "add", "home", "--kind", "token", "--priority", "2", "--json"); code != 0 || strings.Contains(out, "SECRET") {
		t.Fatalf("add home: %d %s", code, out)
	}
	if out, code := p.run("", "add", "nokey", "--kind", "api"); code == 0 || !strings.Contains(out, "secret on standard input") {
		t.Fatalf("add without a secret: %d %s", code, out)
	}
	out, code := p.run("", "list", "--json")
	var views []struct {
		Name    string `json:"name"`
		Kind    string `json:"kind"`
		Default bool   `json:"default"`
		Auth    *struct {
			LoggedIn bool   `json:"logged_in"`
			Method   string `json:"method"`
		} `json:"auth"`
		Plan *struct {
			Available bool `json:"available"`
		} `json:"plan"`
	}
	if err := json.Unmarshal([]byte(out), &views); err != nil || code != 0 || len(views) != 3 {
		t.Fatalf("list --json: %d %v\n%s", code, err, out)
	}
	if strings.Contains(out, "SECRET") {
		t.Fatalf("list shows a secret:\n%s", out)
	}
	// The CLI, asked in each profile's context, sees that profile's credential.
	if views[1].Name != "work" || views[1].Auth == nil || !views[1].Auth.LoggedIn || views[1].Auth.Method != "api_key" ||
		views[2].Name != "home" || views[2].Auth == nil || views[2].Auth.Method != "oauth_token" || !views[0].Default {
		t.Fatalf("list: %s", out)
	}
	// Its /usage says an API key has no plan limits.
	if views[1].Plan == nil || views[1].Plan.Available {
		t.Fatalf("work's plan: %s", out)
	}
	if out, code := p.run("", "list"); code != 0 || !strings.Contains(out, "RATE LIMITS") || !strings.Contains(out, "no plan limits with this login") {
		t.Fatalf("list: %d\n%s", code, out)
	}
	for _, f := range []string{"profiles/profiles.json", "profiles/.secrets/work", "profiles/.secrets/home"} {
		st, err := os.Stat(filepath.Join(p.dataDir, f))
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v %v", f, st.Mode(), err)
		}
	}
	if list, _ := os.ReadFile(filepath.Join(p.dataDir, "profiles/profiles.json")); bytes.Contains(list, []byte("SECRET")) {
		t.Fatalf("profiles.json holds a secret")
	}
	if out, code := p.run("", "default", "work"); code != 0 || !strings.Contains(out, "default profile: work") {
		t.Fatalf("default: %d %s", code, out)
	}

	// A turn holds the profile: remove is refused, and works once it ends.
	path := filepath.Join(p.dataDir, "meridian.db")
	db, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	st := sqlite.NewStore(db, path, sqlstore.Options{})
	defer st.Close()
	owners := cluster.New(cluster.Config{Hosts: st.Hosts, Host: "test-host"})
	if err := owners.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer owners.Close()
	lease, err := session.NewLeases(st.Leases, owners, time.Minute, nil).Acquire(context.Background(), "work", "conv-1", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if out, code := p.run("", "remove", "work"); code == 0 || !strings.Contains(out, "a turn runs on it") {
		t.Fatalf("remove while busy: %d %s", code, out)
	}
	lease.Release()
	if out, code := p.run("", "remove", "work", "--json"); code != 0 || !strings.Contains(out, `"default":"default","removed":"work"`) {
		t.Fatalf("remove: %d %s", code, out)
	}
	if _, err := os.Stat(filepath.Join(p.dataDir, "profiles/.secrets/work")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the secret outlived its profile: %v", err)
	}
}

// A login profile runs the CLI's own login in its config dir on the
// user's terminal: under a pseudo-terminal it gets as far as offering the
// browser sign-in, offline. A login given up (Ctrl-C) leaves no profile;
// without a terminal it is refused at once, and one that takes too long
// is given up.
func TestProfileLoginUnderATerminal(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	p := profileCLI{t: t, bin: buildBinary(t), dataDir: dataDir, env: []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir()}}
	if out, code := p.run("", "add", "pro", "--kind", "login"); code == 0 || !strings.Contains(out, "not one: run `meridian profile add pro --kind login` in a terminal") {
		t.Fatalf("a login without a terminal: %d %s", code, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, buildBinary(t), "profile", "add", "pro", "--kind", "login", "--data-dir", dataDir, "--claude-path", testkit.ClaudePath(t))
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir(), "TERM=xterm"}
	term := testkit.StartPty(t, cmd)
	err := term.WaitFor(45*time.Second, "Paste code here")
	shown := term.Shown()
	if err != nil || !strings.Contains(shown, "https://claude.ai/oauth/authorize") {
		t.Fatalf("the login flow did not offer the browser sign-in: %v\n%q", err, shown)
	}
	if _, err := os.Stat(filepath.Join(dataDir, "profiles", "pro")); err != nil {
		t.Fatalf("the profile's config dir: %v", err)
	}
	_, _ = term.Write([]byte{3}) // Ctrl-C: the user gives up
	_ = cmd.Wait()
	waitScreen := func(want string) {
		t.Helper()
		if err := term.WaitFor(10*time.Second, want); err != nil {
			t.Fatalf("%q never showed:\n%q", want, term.Shown())
		}
	}
	waitScreen("profile pro was not added: the login was interrupted")
	if _, err := os.Stat(filepath.Join(dataDir, "profiles", "pro")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the profile whose login was given up is still there: %v", err)
	}
	if out, _ := p.run("", "list"); strings.Contains(out, "pro") {
		t.Fatalf("list after the login was given up:\n%s", out)
	}

	cmd = exec.CommandContext(ctx, p.bin, "profile", "add", "slow", "--kind", "login", "--login-timeout", "3s", "--data-dir", dataDir, "--claude-path", testkit.ClaudePath(t))
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir(), "TERM=xterm"}
	var out bytes.Buffer
	tty2, err := pty.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer tty2.Close()
	done := make(chan struct{})
	go func() { _, _ = io.Copy(&out, tty2); close(done) }()
	_ = cmd.Wait()
	<-done
	if !strings.Contains(out.String(), "profile slow was not added: the login did not finish within 3s") {
		t.Fatalf("a login that took too long:\n%q", out.String())
	}
	if _, err := os.Stat(filepath.Join(dataDir, "profiles", "slow")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the timed-out profile is still there: %v", err)
	}
}

// serve runs under the default profile: the CLI authenticates with that
// profile's key (not the environment's), keeps its transcripts in the
// profile's config dir, and the key shows in no answer, log page or argv.
func TestServeUsesTheDefaultProfile(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	g.up.Always(testkit.Reply{Text: "ok"})
	p := profileCLI{t: t, bin: g.bin, dataDir: g.dataDir, env: g.env}
	const key = "sk-ant-profile-SECRET-KEY"
	if out, code := p.run(key, "add", "work", "--kind", "api", "--base-url", g.up.URL); code != 0 {
		t.Fatalf("add: %s", out)
	}
	const key2 = "sk-ant-home-SECRET-KEY"
	if out, code := p.run(key2, "add", "home", "--kind", "api", "--base-url", g.up.URL, "--priority", "2"); code != 0 {
		t.Fatalf("add home: %s", out)
	}
	if out, code := p.run("", "default", "work"); code != 0 {
		t.Fatalf("default: %s", out)
	}
	g.start("--log-level", "debug")
	resp, body, err := g.post(prompt("under a profile"), "X-Claude-Code-Session-Id", "prof-1")
	if err != nil || resp.StatusCode != 200 || strings.Contains(body, key) {
		t.Fatalf("request: %v %s", err, body)
	}
	reqs := g.up.Requests()
	if got := reqs[len(reqs)-1].Header.Get("X-Api-Key"); got != key {
		t.Fatalf("the upstream saw key %q, not the profile's", got)
	}
	// The transcript is in the profile's config dir.
	matches, _ := filepath.Glob(filepath.Join(g.dataDir, "profiles", "work", "projects", "*", "*.jsonl"))
	if len(matches) == 0 {
		t.Fatal("no transcript in the profile's config dir")
	}

	// A request may name another profile: it runs with that profile's key,
	// its transcript stays in that profile's dir, and the answer says so.
	resp, body, err = g.post(prompt("under home"), "X-Claude-Code-Session-Id", "prof-2", "X-Meridian-Profile", "home")
	if err != nil || resp.StatusCode != 200 || resp.Header.Get("X-Meridian-Profile") != "home" {
		t.Fatalf("a request for home: %v %v %s", err, resp.Header, body)
	}
	reqs = g.up.Requests()
	if got := reqs[len(reqs)-1].Header.Get("X-Api-Key"); got != key2 {
		t.Fatalf("the upstream saw key %q, not home's", got)
	}
	home, _ := filepath.Glob(filepath.Join(g.dataDir, "profiles", "home", "projects", "*", "*.jsonl"))
	work, _ := filepath.Glob(filepath.Join(g.dataDir, "profiles", "work", "projects", "*", "*.jsonl"))
	if len(home) != 1 || len(work) != 1 {
		t.Fatalf("transcripts: home %v, work %v", home, work)
	}
	resp, body, _ = g.post(prompt("nobody"), "X-Meridian-Profile", "nobody")
	if resp.StatusCode != 400 || !strings.Contains(body, "default, work, home") {
		t.Fatalf("an unknown profile: %d %s", resp.StatusCode, body)
	}
	// No secret in argv of any process, nor in the pages and JSON.
	for _, pid := range append(g.claudes(), g.cmd.Process.Pid) {
		if argv, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline")); bytes.Contains(argv, []byte("SECRET")) {
			t.Fatalf("process %d has the key on its command line", pid)
		}
	}
	for _, path := range []string{"/providers/status", "/telemetry/logs", "/health", "/v1/sessions", "/telemetry/requests", "/telemetry/summary", "/v1/usage/quota", "/metrics", "/inflight"} {
		if _, b := testkit.Get(t, g.url+path); strings.Contains(b, "SECRET") {
			t.Fatalf("%s shows the key", path)
		}
	}
	if _, b := testkit.Get(t, g.url+"/providers/status"); !strings.Contains(b, `"profile":"work"`) || !strings.Contains(b, `"profile":"home"`) {
		t.Fatalf("providers: %s", b)
	}
}

// /health reports each profile's login: a profile that is not logged in
// degrades the answer (and is unavailable when asked for by name), while
// the default still serves.
func TestHealthPerProfile(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	p := profileCLI{t: t, bin: g.bin, dataDir: g.dataDir, env: g.env}
	if out, code := p.run("sk-ant-work", "add", "work", "--kind", "api", "--base-url", g.up.URL); code != 0 {
		t.Fatalf("add work: %s", out)
	}
	// A login profile whose login never happened (added directly: the
	// command would start the CLI's interactive flow).
	if err := profile.Open(g.dataDir).Add(profile.Profile{Name: "pro", Kind: profile.Login}, ""); err != nil {
		t.Fatal(err)
	}
	g.start("--log-level", "debug")
	code, body := testkit.Get(t, g.url+"/health")
	var h struct {
		Status   string `json:"status"`
		Profiles []struct {
			Name   string `json:"name"`
			Status string `json:"status"`
			Claude struct {
				Auth *struct {
					LoggedIn bool `json:"logged_in"`
				} `json:"auth"`
			} `json:"claude"`
		} `json:"profiles"`
	}
	if err := json.Unmarshal([]byte(body), &h); err != nil || code != 200 || h.Status != "degraded" || len(h.Profiles) != 3 {
		t.Fatalf("/health = %d %v\n%s", code, err, body)
	}
	for _, ph := range h.Profiles {
		loggedIn := ph.Claude.Auth != nil && ph.Claude.Auth.LoggedIn
		if (ph.Name == "pro") == loggedIn || (ph.Name == "pro") != (ph.Status == "unavailable") {
			t.Errorf("profile %s: status %s, logged in %v", ph.Name, ph.Status, loggedIn)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, g.url+"/health", nil)
	req.Header.Set("X-Meridian-Profile", "pro")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("/health for pro: %d", resp.StatusCode)
	}
}

// A token profile whose upstream reports its 5-hour window 20 % used (the
// plan's rate-limit headers, which the CLI reads under an OAuth login)
// shows 20 % on /providers, in its JSON and on its page, beside the 7-day
// window's share: the CLI reports every window's share on each turn.
func TestProvidersShowEachWindowsShare(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	reset := fmt.Sprint(time.Now().Add(3 * time.Hour).Unix())
	g.up.Always(testkit.Reply{Text: "ok", Headers: map[string]string{
		"anthropic-ratelimit-unified-status":               "allowed",
		"anthropic-ratelimit-unified-reset":                reset,
		"anthropic-ratelimit-unified-5h-status":            "allowed",
		"anthropic-ratelimit-unified-5h-reset":             reset,
		"anthropic-ratelimit-unified-5h-utilization":       "0.2",
		"anthropic-ratelimit-unified-7d-status":            "allowed",
		"anthropic-ratelimit-unified-7d-reset":             reset,
		"anthropic-ratelimit-unified-7d-utilization":       "0.07",
		"anthropic-ratelimit-unified-representative-claim": "five_hour",
	}})
	p := profileCLI{t: t, bin: g.bin, dataDir: g.dataDir, env: g.env}
	if out, code := p.run("sk-ant-oat-window-SECRET", "add", "plan", "--kind", "token"); code != 0 {
		t.Fatalf("add: %s", out)
	}
	if out, code := p.run("", "default", "plan"); code != 0 {
		t.Fatalf("default: %s", out)
	}
	// A token profile's CLI is given no base URL of its own (its token
	// goes to Anthropic's API alone), so a wrapper points it at the fake.
	wrapper := filepath.Join(t.TempDir(), "claude")
	script := "#!/bin/sh\nexport ANTHROPIC_BASE_URL=" + g.up.URL + "\nexec " + testkit.ClaudePath(t) + " \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	g.start("--claude-path", wrapper)
	if resp, body, err := g.post(prompt("hello"), "X-Claude-Code-Session-Id", "windows"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("a turn under the token profile: %v %s", err, body)
	}
	var status struct {
		Providers []struct {
			Profile    string
			RateLimits []struct {
				Type        string
				Utilization float64
			} `json:"rate_limits"`
		}
	}
	_, body := testkit.Get(t, g.url+"/providers/status")
	if err := json.Unmarshal([]byte(body), &status); err != nil {
		t.Fatal(err)
	}
	shares := map[string]float64{}
	for _, pr := range status.Providers {
		if pr.Profile == "plan" {
			for _, w := range pr.RateLimits {
				shares[w.Type] = w.Utilization
			}
		}
	}
	if shares["five_hour"] != 0.2 || shares["seven_day"] != 0.07 {
		t.Fatalf("the plan profile's windows: %v (%s)", shares, body)
	}
	shown := page(t, g.url+"/providers")
	if !regexp.MustCompile(`five_hour</td><td>[^<]*</td><td class="num">20%`).MatchString(shown) {
		t.Fatalf("the page does not show five_hour at 20%%:\n%s", shown)
	}
}

// Without the CLI, profile list keeps its columns and says why the login
// is unknown under the table, once.
func TestProfileListWithoutTheCLI(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(buildBinary(t), "profile", "list", "--data-dir", t.TempDir(), "--claude-path", filepath.Join(t.TempDir(), "no-claude"))
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir()}
	out, code := combined(t, cmd)
	lines := strings.Split(out, "\n")
	if code != 0 || len(lines) < 4 || !strings.HasPrefix(lines[1], "default") || len(lines[1]) > 80 ||
		!strings.Contains(out, "The login could not be checked: ") || strings.Count(out, "not found") != 1 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}
