package main

import (
	"bytes"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/testkit"
)

func TestFlagsHaveEnvironmentTwins(t *testing.T) {
	env := []string{"MERIDIAN_PORT=4567", "MERIDIAN_HOST=127.0.0.2", "MERIDIAN_MAX_CONCURRENT=3", "MERIDIAN_CLAUDE_PATH=/opt/claude",
		"MERIDIAN_QUEUE_TIMEOUT=5s", "MERIDIAN_DATA_DIR=/d", "MERIDIAN_ADMIN_KEY=k", "MERIDIAN_MAX_BODY_BYTES=99", "HOME=/home/u"}
	root := newRootCommand(env, nil)
	if err := root.ParseFlags(nil); err != nil {
		t.Fatal(err)
	}
	f := root.Flags()
	for name, want := range map[string]string{
		"port": "4567", "host": "127.0.0.2", "max-concurrent": "3", "claude-path": "/opt/claude",
		"queue-timeout": "5s", "data-dir": "/d", "admin-key": "k", "max-body-bytes": "99",
	} {
		if got := f.Lookup(name).Value.String(); got != want {
			t.Errorf("--%s = %q from the environment, want %q", name, got, want)
		}
	}
	// The flag wins over its twin.
	root = newRootCommand(env, nil)
	if err := root.ParseFlags([]string{"--port", "9"}); err != nil {
		t.Fatal(err)
	}
	if got := root.Flags().Lookup("port").Value.String(); got != "9" {
		t.Errorf("--port = %s, want the flag's 9", got)
	}
}

func TestDefaults(t *testing.T) {
	root := newRootCommand([]string{"HOME=/home/u"}, nil)
	_ = root.ParseFlags(nil)
	f := root.Flags()
	if f.Lookup("host").Value.String() != "127.0.0.1" || f.Lookup("port").Value.String() != "3456" ||
		f.Lookup("max-concurrent").Value.String() != "10" || f.Lookup("data-dir").Value.String() != "/home/u/.local/share/meridian" {
		t.Fatalf("defaults: host %s port %s max %s data %s", f.Lookup("host").Value, f.Lookup("port").Value,
			f.Lookup("max-concurrent").Value, f.Lookup("data-dir").Value)
	}
	root = newRootCommand([]string{"XDG_DATA_HOME=/xdg"}, nil)
	_ = root.ParseFlags(nil)
	if got := root.Flags().Lookup("data-dir").Value.String(); got != "/xdg/meridian" {
		t.Fatalf("data dir under XDG_DATA_HOME = %s", got)
	}
}

func TestBadEnvironmentIsRefused(t *testing.T) {
	root := newRootCommand([]string{"MERIDIAN_PORT=eighty"}, nil)
	root.SetArgs(nil)
	root.SetErr(io.Discard)
	err := root.Execute()
	if err == nil || !strings.Contains(err.Error(), "MERIDIAN_PORT") {
		t.Fatalf("err = %v", err)
	}
}

func TestNonLoopbackWithoutKeyIsRefused(t *testing.T) {
	root := newRootCommand(nil, nil)
	root.SetArgs([]string{"--host", "0.0.0.0", "--port", "0", "--data-dir", t.TempDir()})
	root.SetErr(io.Discard)
	err := root.Execute()
	if err == nil || !strings.Contains(err.Error(), "API key") {
		t.Fatalf("err = %v", err)
	}
}

func TestVersion(t *testing.T) {
	root := newRootCommand(nil, nil)
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{"version"})
	if err := root.Execute(); err != nil || !strings.HasPrefix(out.String(), "meridian ") {
		t.Fatalf("version: %v %q", err, out.String())
	}
}

// buildBinary builds meridian into a temporary directory.
func buildBinary(t testing.TB) string { return testkit.BuildMeridian(t) }

// startBinary runs the binary on a free port and returns once it accepts
// connections, with the process, its address and how long that took.
func startBinary(t testing.TB, bin string) (*exec.Cmd, string, time.Duration) {
	t.Helper()
	return testkit.ServeMeridian(t, bin, "--claude-path", filepath.Join(t.TempDir(), "absent-claude"))
}

// The binary starts, serves, and drains on SIGTERM with exit status 0.
func TestBinaryServesAndStopsCleanly(t *testing.T) {
	bin := buildBinary(t)
	cmd, addr, _ := startBinary(t, bin)
	resp, err := http.Get("http://" + addr + "/health")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	// The CLI path points nowhere: health says so, with a 503.
	if resp.StatusCode != 503 || !strings.Contains(string(body), "not found") {
		t.Fatalf("health = %d %s", resp.StatusCode, body)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit: %v", err)
		}
	case <-time.After(testkit.Scale(10 * time.Second)):
		_ = cmd.Process.Kill()
		t.Fatal("meridian did not stop on SIGTERM")
	}
}

// BenchmarkStartup reports the time from exec to accepting connections,
// and the resident memory of an idle gateway.
func BenchmarkStartup(b *testing.B) {
	bin := buildBinary(b)
	var total time.Duration
	var rssKB int
	for i := 0; i < b.N; i++ {
		cmd, _, took := startBinary(b, bin)
		total += took
		time.Sleep(300 * time.Millisecond)
		rssKB = max(rssKB, testkit.RSSKB(cmd.Process.Pid))
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}
	b.ReportMetric(float64(total.Microseconds())/float64(b.N)/1000, "ms-to-listening")
	b.ReportMetric(float64(rssKB)/1024, "idle-rss-MB")
}

// MERIDIAN_MAX_CONCURRENT is as explicit as the flag: a --max-live below
// it is a contradiction.
func TestEnvironmentConcurrencyIsAChoice(t *testing.T) {
	root := newRootCommand([]string{"MERIDIAN_MAX_CONCURRENT=8"}, nil)
	root.SetArgs([]string{"--max-live", "2", "--port", "0", "--data-dir", t.TempDir()})
	root.SetErr(io.Discard)
	if err := root.Execute(); err == nil || !strings.Contains(err.Error(), "below --max-concurrent 8") {
		t.Fatalf("an environment choice counts as explicit: %v", err)
	}
}
