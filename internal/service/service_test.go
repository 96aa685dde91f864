package service

import (
	"bytes"
	"context"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/testkit"
)

func TestImportsFlowDownward(t *testing.T) { testkit.CheckImports(t, "internal/atomicfile") }

func unit(t *testing.T) Unit {
	bin, err := os.Executable() // a file that exists, as systemd-analyze wants
	if err != nil {
		t.Fatal(err)
	}
	return Unit{
		Binary:  bin,
		Env:     map[string]string{"MERIDIAN_CONFIG": "/home/u/.config/meridian/config.toml", "PATH": "/usr/bin:/bin", "MERIDIAN_PORT": "4000"},
		Secrets: map[string]string{"MERIDIAN_ADMIN_KEY": `k"ey 100%`},
		EnvFile: "/home/u/.config/meridian/service.env",
		Drain:   30 * time.Second,
		LogFile: "/Users/u/Library/Logs/meridian.log",
	}
}

// The unit passes systemd's own checker without a single warning.
func TestSystemdAcceptsTheUnit(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("systemd-analyze is missing (scripts/install-packages installs systemd)")
		}
		t.Skip("systemd-analyze not installed")
	}
	dir := t.TempDir()
	u := unit(t)
	u.EnvFile = filepath.Join(dir, "service.env")
	if err := os.WriteFile(u.EnvFile, []byte(u.EnvFileText()), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, Name)
	if err := os.WriteFile(path, []byte(u.Systemd()), 0o644); err != nil {
		t.Fatal(err)
	}
	runtime := filepath.Join(dir, "run")
	if err := os.Mkdir(runtime, 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(analyze, "verify", "--user", path)
	cmd.Env = []string{"XDG_RUNTIME_DIR=" + runtime, "HOME=" + dir, "PATH=" + os.Getenv("PATH")}
	out, err := cmd.CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) != 0 {
		t.Fatalf("systemd-analyze verify --user: %v\n%s\n%s", err, out, u.Systemd())
	}
	// It would have said so: a broken unit is reported.
	broken := strings.Replace(u.Systemd(), "Type=exec", "Type=exex", 1)
	if err := os.WriteFile(path, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd = exec.Command(analyze, "verify", "--user", path)
	cmd.Env = []string{"XDG_RUNTIME_DIR=" + runtime, "HOME=" + dir, "PATH=" + os.Getenv("PATH")}
	if out, _ := cmd.CombinedOutput(); !strings.Contains(string(out), "exex") {
		t.Fatalf("a broken unit passed: %s", out)
	}
	text := u.Systemd()
	for _, want := range []string{"KillMode=mixed", "Restart=on-failure", "TimeoutStopSec=45s", "WantedBy=default.target", "Environment=MERIDIAN_PORT=4000"} {
		if !strings.Contains(text, want) {
			t.Errorf("the unit lacks %s", want)
		}
	}
	if strings.Contains(text, "k\\\"ey") || strings.Contains(text, "MERIDIAN_ADMIN_KEY") {
		t.Errorf("the key is in the unit itself:\n%s", text)
	}
}

// plist is the property list's structure, read back.
type plist struct {
	XMLName xml.Name `xml:"plist"`
	Version string   `xml:"version,attr"`
	Dict    struct {
		Items []struct {
			XMLName xml.Name
			Text    string `xml:",chardata"`
			Inner   []byte `xml:",innerxml"`
		} `xml:",any"`
	} `xml:"dict"`
}

// The launchd agent: plutil -lint where it exists (macOS), and here a
// check of the property list's shape: keys alternate with values of the
// types launchd reads.
func TestLaunchdAgentIsAWellFormedPropertyList(t *testing.T) {
	u := unit(t)
	text := u.Launchd()
	if plutil, err := exec.LookPath("plutil"); err == nil {
		path := filepath.Join(t.TempDir(), Label+".plist")
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(plutil, "-lint", path).CombinedOutput(); err != nil {
			t.Fatalf("plutil -lint: %v %s", err, out)
		}
	}
	if !strings.Contains(text, `<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN"`) {
		t.Fatal("no plist doctype")
	}
	var p plist
	if err := xml.Unmarshal([]byte(text), &p); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"Label": "string", "ProgramArguments": "array", "EnvironmentVariables": "dict", "RunAtLoad": "true",
		"KeepAlive": "dict", "ExitTimeOut": "integer", "StandardOutPath": "string", "StandardErrorPath": "string",
	}
	items := p.Dict.Items
	if p.Version != "1.0" || len(items) != 2*len(want) {
		t.Fatalf("version %q, %d items:\n%s", p.Version, len(items), text)
	}
	for i := 0; i < len(items); i += 2 {
		k, v := items[i], items[i+1]
		if k.XMLName.Local != "key" || want[k.Text] != v.XMLName.Local {
			t.Errorf("%s %q is followed by <%s>, want <%s>", k.XMLName.Local, k.Text, v.XMLName.Local, want[k.Text])
		}
		switch k.Text {
		case "Label":
			if v.Text != Label {
				t.Errorf("Label %q", v.Text)
			}
		case "ExitTimeOut":
			if v.Text != "45" {
				t.Errorf("ExitTimeOut %s, want the drain and a grace", v.Text)
			}
		case "ProgramArguments":
			if !strings.Contains(string(v.Inner), "<string>serve</string>") {
				t.Errorf("ProgramArguments %s", v.Inner)
			}
		case "EnvironmentVariables":
			if !strings.Contains(string(v.Inner), "k&#34;ey 100%") && !strings.Contains(string(v.Inner), "k&quot;ey 100%") {
				t.Errorf("the key is not escaped into the agent: %s", v.Inner)
			}
		}
	}
}

// Without a running user systemd, install writes the unit, says how to
// start it, and succeeds; the state says systemd is not running; a
// second install finds the unit unchanged; uninstall removes it.
func TestInstallWithoutARunningSystemd(t *testing.T) {
	home := t.TempDir()
	runtime := filepath.Join(home, "run") // empty: no user manager's bus in it
	if err := os.Mkdir(runtime, 0o700); err != nil {
		t.Fatal(err)
	}
	m := Manager{GOOS: "linux", Home: home, Env: map[string]string{"XDG_RUNTIME_DIR": runtime, "PATH": os.Getenv("PATH"), "DBUS_SESSION_BUS_ADDRESS": "unix:path=" + filepath.Join(runtime, "bus")}}
	u := unit(t)
	u.EnvFile = filepath.Join(home, ".config", "meridian", "service.env")
	var out bytes.Buffer
	if err := m.Install(context.Background(), u, &out); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(home, ".config", "systemd", "user", Name)
	if b, err := os.ReadFile(path); err != nil || string(b) != u.Systemd() {
		t.Fatalf("unit not written at %s: %v", path, err)
	}
	if !strings.Contains(out.String(), "systemd is not running for this user") || !strings.Contains(out.String(), "systemctl --user enable --now meridian.service") {
		t.Fatalf("install said:\n%s", out.String())
	}
	for _, p := range []string{path, u.EnvFile} {
		if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v: it holds or names the key", p, fi.Mode())
		}
	}
	if env, _ := os.ReadFile(u.EnvFile); !strings.Contains(string(env), `MERIDIAN_ADMIN_KEY="k\"ey 100%"`) {
		t.Errorf("environment file: %s", env)
	}
	st := m.State(context.Background())
	if st.Running || !st.Installed || st.Why == "" {
		t.Fatalf("state %+v", st)
	}
	out.Reset()
	if err := m.Install(context.Background(), u, &out); err != nil || !strings.Contains(out.String(), "unchanged") {
		t.Fatalf("second install: %v %s", err, out.String())
	}
	if err := m.Logs(context.Background(), false, &out); err == nil || !strings.Contains(err.Error(), "not running") {
		t.Fatalf("logs without systemd: %v", err)
	}
	if err := m.Uninstall(context.Background(), u.EnvFile, &out); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, u.EnvFile} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Fatalf("uninstall left %s", p)
		}
	}
}

// The unit carries the caller's settings, the secrets apart, and waits
// out the drain those settings ask for; a client's key stays out of it;
// a `go run` binary is refused.
func TestForBinary(t *testing.T) {
	env := map[string]string{"PATH": "/bin", "MERIDIAN_PORT": "4000", "MERIDIAN_ADMIN_KEY": "k", "MERIDIAN_CLUSTER_KEY": "c", "MERIDIAN_API_KEY": "client", "MERIDIAN_DRAIN_TIMEOUT": "2m", "HOME": "/home/u"}
	u, err := ForBinary("/usr/bin/meridian", "/c/config.toml", "/c/service.env", "/l/meridian.log", env, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if u.Env["MERIDIAN_PORT"] != "4000" || u.Env["MERIDIAN_CONFIG"] != "/c/config.toml" || u.Env["PATH"] != "/bin" || u.Env["HOME"] != "" {
		t.Errorf("env %v", u.Env)
	}
	if _, ok := u.Env["MERIDIAN_ADMIN_KEY"]; ok || u.Secrets["MERIDIAN_ADMIN_KEY"] != "k" || u.Secrets["MERIDIAN_CLUSTER_KEY"] != "c" || u.EnvFile != "/c/service.env" {
		t.Errorf("the key: env %v secrets %v file %q", u.Env, u.Secrets, u.EnvFile)
	}
	if _, ok := u.Env["MERIDIAN_API_KEY"]; ok || u.Secrets["MERIDIAN_API_KEY"] != "" {
		t.Errorf("a client's key reached the unit: env %v secrets %v", u.Env, u.Secrets)
	}
	if !strings.Contains(u.Systemd(), "TimeoutStopSec=135s") {
		t.Errorf("the stop timeout does not wait out a 2m drain:\n%s", u.Systemd())
	}
	if _, err := ForBinary("/tmp/go-build123/b001/exe/meridian", "", "", "", env, time.Second); err == nil || !strings.Contains(err.Error(), "go run") {
		t.Fatalf("a go run binary: %v", err)
	}
}
