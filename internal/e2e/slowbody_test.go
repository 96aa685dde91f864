package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// slowBody opens a connection that sends a Messages request's headers for
// a body of size bytes and then only first of them; the rest is the
// caller's to dribble.
func slowBody(t *testing.T, addr string, size int, first string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "POST /v1/messages HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nX-Api-Key: k\r\nContent-Length: %d\r\n\r\n%s", addr, size, first)
	return conn
}

// slowBodies opens n connections that each sent one byte of a 100-byte
// body.
func slowBodies(t *testing.T, addr string, n int) []net.Conn {
	t.Helper()
	conns := make([]net.Conn, n)
	for i := range conns {
		conns[i] = slowBody(t, addr, 100, "{")
	}
	return conns
}

// answerOf reads the response a slow body got, if any, within d.
func answerOf(conn net.Conn, d time.Duration) (*http.Response, string, error) {
	_ = conn.SetReadDeadline(time.Now().Add(d))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b), nil
}

// Fifty clients that sent one byte of their bodies and stopped do not hold
// a SIGTERM up: the drain ends their reads at once, each is answered 503
// with a wait, and meridian exits long before its drain timeout.
func TestStalledBodiesDoNotHoldTheDrain(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	g.start("--drain-timeout", "60s")
	addr := strings.TrimPrefix(g.url, "http://")
	conns := slowBodies(t, addr, 50)
	// Every one of them is inside a handler, reading its body.
	time.Sleep(500 * time.Millisecond)
	if err := g.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	signalled := time.Now()
	exited := make(chan error, 1)
	go func() { exited <- g.cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("meridian exited with %v", err)
		}
	case <-time.After(testkit.Scale(15 * time.Second)):
		t.Fatal("meridian still runs 15 s after SIGTERM with 50 stalled bodies open (drain timeout 60 s)")
	}
	t.Logf("exited %v after SIGTERM with 50 stalled bodies", time.Since(signalled).Round(time.Millisecond))
	for i, c := range conns[:5] {
		resp, body, err := answerOf(c, 5*time.Second)
		if err != nil {
			t.Fatalf("stalled body %d got no answer: %v", i, err)
		}
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" ||
			!strings.Contains(body, `"type":"error"`) || !strings.Contains(body, "shutting down") {
			t.Fatalf("stalled body %d: %d Retry-After=%q %s", i, resp.StatusCode, resp.Header.Get("Retry-After"), body)
		}
	}
}

// Bodies dribbled at a byte a second are cut at --body-timeout with a 408
// in the Messages error shape, and their connections close.
func TestDribbledBodiesAreCutAtTheBodyTimeout(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	g.start("--body-timeout", "2s")
	addr := strings.TrimPrefix(g.url, "http://")
	conns := slowBodies(t, addr, 50)
	stop := make(chan struct{})
	var dribbling sync.WaitGroup
	for _, c := range conns {
		dribbling.Go(func() {
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
					if _, err := c.Write([]byte(" ")); err != nil {
						return
					}
				}
			}
		})
	}
	defer dribbling.Wait()
	defer close(stop)
	for i, c := range conns {
		resp, body, err := answerOf(c, 15*time.Second)
		if err != nil {
			t.Fatalf("dribbled body %d was not cut: %v", i, err)
		}
		if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(body, `"type":"error"`) || !strings.Contains(body, "--body-timeout") {
			t.Fatalf("dribbled body %d: %d %s", i, resp.StatusCode, body)
		}
	}
	// The server is still there for everyone else.
	if err := testkit.WaitFor(5*time.Second, func() error {
		r, err := http.Get(g.url + "/health")
		if err != nil {
			return err
		}
		r.Body.Close()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
