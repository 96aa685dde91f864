package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// `meridian service install` on this machine, where no user systemd runs:
// the unit is written, the command says how to start it and exits 0, and
// `service status` says systemd is not running.
func TestServiceInstallWithoutUserSystemd(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	home := t.TempDir()
	runtime := filepath.Join(home, "run")
	if err := os.Mkdir(runtime, 0o700); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, error) {
		cmd := exec.Command(bin, args...)
		cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "XDG_RUNTIME_DIR=" + runtime,
			"DBUS_SESSION_BUS_ADDRESS=unix:path=" + filepath.Join(runtime, "bus"), "MERIDIAN_PORT=" + closedPort(t)}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("service", "install")
	unit := filepath.Join(home, ".config", "systemd", "user", "meridian.service")
	if err != nil || !strings.Contains(out, "wrote "+unit) || !strings.Contains(out, "systemctl --user enable --now meridian.service") {
		t.Fatalf("service install: %v\n%s", err, out)
	}
	text, _ := os.ReadFile(unit)
	for _, want := range []string{"ExecStart=" + bin + " serve", "Environment=MERIDIAN_CONFIG=" + filepath.Join(home, ".config", "meridian", "config.toml"), "Environment=MERIDIAN_PORT="} {
		if !strings.Contains(string(text), want) {
			t.Errorf("the unit lacks %q:\n%s", want, text)
		}
	}
	out, err = run("service", "status")
	if err != nil || !strings.Contains(out, "(installed)") || !strings.Contains(out, "systemd is not running for this user") || !strings.Contains(out, "nothing answers") {
		t.Fatalf("service status: %v\n%s", err, out)
	}
	if out, err = run("service", "uninstall"); err != nil || !strings.Contains(out, "removed "+unit) {
		t.Fatalf("service uninstall: %v\n%s", err, out)
	}
}

// A `go run` binary is temporary: installing it as a service is refused.
func TestServiceInstallRefusesATemporaryBinary(t *testing.T) {
	root := newRootCommand([]string{"HOME=" + t.TempDir()}, nil)
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs([]string{"service", "install"})
	if err := root.Execute(); err == nil || !strings.Contains(err.Error(), "go run") {
		t.Fatalf("installing the test binary: %v", err)
	}
}
