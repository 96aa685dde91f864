package testkit

import (
	"fmt"
	"net"
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

// Balancer is a real load balancer in front of several hosts, on a free
// loopback port.
type Balancer struct {
	URL string
}

// HAProxy starts HAProxy with config (deploy/haproxy.cfg), its frontend
// bound to a free loopback port and its servers replaced by backends
// (host:port each), and stops it when the test ends. Without HAProxy the
// test fails: ./scripts/test installs it.
func HAProxy(tb testing.TB, config string, backends []string) *Balancer {
	tb.Helper()
	return startBalancer(tb, "haproxy", config, backends, func(f []string, addr string) (string, bool) {
		switch {
		case len(f) >= 2 && f[0] == "bind":
			return "    bind " + addr, true
		case len(f) >= 3 && f[0] == "server":
			return "", false
		}
		return "", true
	}, func(f []string, backend string) string {
		f[2] = backend
		return "    " + strings.Join(f, " ")
	}, func(dir, cfg string) []string { return []string{"-db", "-f", cfg} })
}

// Nginx starts nginx with config (deploy/nginx.conf) the same way, its
// files in a folder of the test's.
func Nginx(tb testing.TB, config string, backends []string) *Balancer {
	tb.Helper()
	return startBalancer(tb, "nginx", config, backends, func(f []string, addr string) (string, bool) {
		switch {
		case len(f) >= 2 && f[0] == "listen":
			return "        listen " + addr + ";", true
		case len(f) >= 2 && f[0] == "server" && strings.Contains(f[1], ":"):
			return "", false
		}
		return "", true
	}, func(f []string, backend string) string {
		f[1] = backend
		return "        " + strings.Join(f, " ")
	}, func(dir, cfg string) []string { return []string{"-p", dir, "-c", cfg, "-g", "daemon off;"} })
}

// startBalancer rewrites config line by line — listen says what becomes
// of a line (replaced, or false for a server line), server writes a
// server line for a backend — and runs the program with args.
func startBalancer(tb testing.TB, name, config string, backends []string,
	listen func(fields []string, addr string) (string, bool), server func(fields []string, backend string) string,
	args func(dir, cfg string) []string) *Balancer {
	bin, err := exec.LookPath(name)
	if err != nil {
		if bin, err = exec.LookPath("/usr/sbin/" + name); err != nil {
			tb.Fatalf("no %s found (apt-get install %s; ./scripts/test installs it)", name, name)
		}
	}
	port, err := freePort("127.0.0.1")
	if err != nil {
		tb.Fatal(err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	var out []string
	n := 0
	for _, line := range strings.Split(config, "\n") {
		f := strings.Fields(line)
		replaced, keep := listen(f, addr)
		switch {
		case !keep:
			if n >= len(backends) {
				continue
			}
			line = server(f, backends[n])
			n++
		case replaced != "":
			line = replaced
		}
		out = append(out, line)
	}
	if n != len(backends) {
		tb.Fatalf("the %s config names %d servers, the test %d hosts", name, n, len(backends))
	}
	dir := tb.TempDir()
	// Run as root, nginx's workers are another user, who must reach the
	// temporary files nginx makes for them here.
	if err := os.Chmod(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	cfg := filepath.Join(dir, name+".conf")
	if err := os.WriteFile(cfg, []byte(strings.Join(out, "\n")), 0o600); err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(bin, args(dir, cfg)...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	// Its own process group: nginx's workers go with their master.
	procgroup.Prepare(cmd)
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	tb.Cleanup(func() {
		// Asked to stop, the master stops its workers and reaps them; the
		// group is killed only if it will not.
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = procgroup.SignalGroup(cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	})
	if err := WaitFor(10*time.Second, func() error {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return fmt.Errorf("%s does not listen yet: %w", name, err)
		}
		return c.Close()
	}); err != nil {
		tb.Fatal(err)
	}
	return &Balancer{URL: "http://" + addr}
}
