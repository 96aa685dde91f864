package testkit

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Balancer is a real HAProxy in front of several hosts, on a free
// loopback port.
type Balancer struct {
	URL string
	cmd *exec.Cmd
}

// HAProxy starts HAProxy with config (a deploy/ example), its frontend
// bound to a free loopback port and its servers replaced by backends
// (host:port each), and stops it when the test ends. Without HAProxy the
// test fails: ./scripts/test installs it.
func HAProxy(tb testing.TB, config string, backends []string) *Balancer {
	tb.Helper()
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		if bin, err = exec.LookPath("/usr/sbin/haproxy"); err != nil {
			tb.Fatal("no haproxy found (apt-get install haproxy; ./scripts/test installs it)")
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
		switch {
		case len(f) >= 2 && f[0] == "bind":
			line = "    bind " + addr
		case len(f) >= 3 && f[0] == "server":
			if n >= len(backends) {
				continue
			}
			f[2] = backends[n]
			n++
			line = "    " + strings.Join(f, " ")
		}
		out = append(out, line)
	}
	if n != len(backends) {
		tb.Fatalf("the balancer's config names %d servers, the test %d hosts", n, len(backends))
	}
	path := filepath.Join(tb.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(path, []byte(strings.Join(out, "\n")), 0o600); err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(bin, "-db", "-f", path)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	if err := WaitFor(10*time.Second, func() error {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return fmt.Errorf("haproxy does not listen yet: %w", err)
		}
		return c.Close()
	}); err != nil {
		tb.Fatal(err)
	}
	return &Balancer{URL: "http://" + addr, cmd: cmd}
}
