package testkit

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

// BuildMeridianTo builds the meridian binary into dir and returns its
// path; for a TestMain, which builds it once for all its tests.
func BuildMeridianTo(dir string) (string, error) {
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "meridian")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/meridian")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %w\n%s", err, out)
	}
	return bin, nil
}

// RunWithMeridian is a TestMain's body for tests that run the binary:
// it builds meridian once into a temporary dir, sets *bin, runs the tests
// and removes the dir, returning the exit code.
func RunWithMeridian(m *testing.M, bin *string) int {
	dir, err := os.MkdirTemp("", "meridian-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if *bin, err = BuildMeridianTo(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// BuildMeridian builds the meridian binary for one test.
func BuildMeridian(tb testing.TB) string {
	tb.Helper()
	bin, err := BuildMeridianTo(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	return bin
}

var listeningRe = regexp.MustCompile(`meridian listening.*addr"?[=:]"?([0-9.:\[\]]+)`)

// StartMeridian starts a meridian serve command and returns its address
// once it accepts connections; everything it logs goes to log.
func StartMeridian(tb testing.TB, cmd *exec.Cmd, log io.Writer) string {
	tb.Helper()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	sc := bufio.NewScanner(io.TeeReader(stderr, log))
	var addr string
	for addr == "" && sc.Scan() {
		if m := listeningRe.FindStringSubmatch(sc.Text()); m != nil {
			addr = m[1]
		}
	}
	if addr == "" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		tb.Fatal("meridian never reported listening")
	}
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		tb.Fatal(err)
	}
	conn.Close()
	go func() { _, _ = io.Copy(log, stderr) }()
	return addr
}

// ServeMeridian runs bin on a free port and a fresh data dir and HOME,
// with args, and returns once it accepts connections: the process, its
// address and how long that took.
func ServeMeridian(tb testing.TB, bin string, args ...string) (*exec.Cmd, string, time.Duration) {
	tb.Helper()
	cmd := exec.Command(bin, append([]string{"--port", "0", "--data-dir", tb.TempDir()}, args...)...)
	cmd.Env = []string{"HOME=" + tb.TempDir(), "PATH=" + os.Getenv("PATH")}
	start := time.Now()
	addr := StartMeridian(tb, cmd, io.Discard)
	return cmd, addr, time.Since(start)
}

// Get fetches u and returns its status and body.
func Get(tb testing.TB, u string) (int, string) {
	tb.Helper()
	resp, err := http.Get(u)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
