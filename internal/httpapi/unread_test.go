package httpapi

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// An answer given before its request's body arrived (a 404, a refused
// host name) goes out within the body timeout even when the client
// declared a body and never sends it, and the connection then closes;
// a client that sends its whole body keeps its connection for the next
// request.
func TestAnAnswerBeforeTheBodyIsNotHeldByIt(t *testing.T) {
	const timeout = 300 * time.Millisecond
	s, err := New(Config{Listen: Listen{Addr: "127.0.0.1:0", BodyTimeout: timeout}, Models: noModels()})
	if err != nil {
		t.Fatal(err)
	}
	url, stop, done := serving(t, s)
	defer func() { stop(); <-done }()
	addr := strings.TrimPrefix(url, "http://")

	for _, c := range []struct{ name, host, path string }{
		{"a 404", addr, "/nope"},
		{"a refused host name", "rebound.example", "/v1/messages"},
	} {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"a\":", c.path, c.host)
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		r := bufio.NewReader(conn)
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			t.Fatalf("%s: no answer: %v", c.name, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		took := time.Since(start)
		if resp.StatusCode < 400 || took > timeout+2*time.Second {
			t.Fatalf("%s: %d after %v", c.name, resp.StatusCode, took)
		}
		if _, err := r.ReadByte(); err != io.EOF {
			t.Fatalf("%s: the connection stayed open (%v)", c.name, err)
		}
		conn.Close()
		t.Logf("%s: %d after %v, then the connection closed", c.name, resp.StatusCode, took.Round(10*time.Millisecond))
	}

	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	r := bufio.NewReader(conn)
	for i := range 2 {
		fmt.Fprintf(conn, "POST /nope HTTP/1.1\r\nHost: %s\r\nContent-Length: 2\r\n\r\n{}", addr)
		resp, err := http.ReadResponse(r, nil)
		if err != nil || resp.StatusCode != http.StatusNotFound {
			t.Fatalf("request %d on one connection: %v %v", i+1, err, resp)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
	}
}
