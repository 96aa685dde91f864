//go:build faultmatrix

package faultmatrix

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

func readAll(resp *http.Response) string {
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// jsonField is a top-level string field of a JSON object.
func jsonField(body, name string) string {
	var m map[string]any
	_ = json.Unmarshal([]byte(body), &m)
	s, _ := m[name].(string)
	return s
}

// headerBounds: headers beyond 64 KiB in all are refused with 431,
// however they are made up; a large but fitting header is not.
func headerBounds(t *testing.T, c *cluster, f *figures) {
	h := c.hosts[1]
	h.ensure()
	cases := []struct {
		name string
		set  func(http.Header)
		want int
	}{
		{"one 1 MiB header", func(hd http.Header) { hd.Set("X-Big", strings.Repeat("a", 1<<20)) }, http.StatusRequestHeaderFieldsTooLarge},
		{"20,000 headers", func(hd http.Header) {
			for i := range 20000 {
				hd.Set(fmt.Sprintf("X-H-%d", i), "v")
			}
		}, http.StatusRequestHeaderFieldsTooLarge},
		{"a 900 KB cookie", func(hd http.Header) { hd.Set("Cookie", "c="+strings.Repeat("b", 900_000)) }, http.StatusRequestHeaderFieldsTooLarge},
		{"a 48 KiB header", func(hd http.Header) { hd.Set("X-Fits", strings.Repeat("c", 48<<10)) }, http.StatusOK},
	}
	var got []string
	for _, cs := range cases {
		req, _ := http.NewRequest(http.MethodGet, h.url()+"/health", nil)
		cs.set(req.Header)
		status := 0
		if resp, err := http.DefaultClient.Do(req); err == nil {
			status = resp.StatusCode
			resp.Body.Close()
		}
		if status != cs.want {
			t.Errorf("%s: %d, want %d", cs.name, status, cs.want)
		}
		got = append(got, fmt.Sprintf("%s %d", cs.name, status))
	}
	f.add(t, "%s", strings.Join(got, ", "))
}

// rawHTTP sends requests no client library would and reads the first
// status line of the answer (0 when the connection closed without one).
func rawHTTP(addr, request string, wait time.Duration) (int, string, time.Duration) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return 0, err.Error(), 0
	}
	defer conn.Close()
	start := time.Now()
	_ = conn.SetDeadline(start.Add(wait))
	if _, err := io.WriteString(conn, request); err != nil {
		return 0, err.Error(), time.Since(start)
	}
	r := bufio.NewReader(conn)
	resp, err := http.ReadResponse(r, nil)
	took := time.Since(start)
	if err != nil {
		return 0, "closed: " + err.Error(), took
	}
	var b strings.Builder
	_ = resp.Write(&b)
	// Whatever follows at once: a pipelined request's answer.
	_ = conn.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	rest, _ := io.ReadAll(io.LimitReader(r, 4096))
	return resp.StatusCode, b.String() + string(rest), took
}

// rawOddities: what a broken client, a scanner or a smuggling attempt
// sends, straight to one host.
func rawOddities(t *testing.T, c *cluster, f *figures) {
	h := c.hosts[1]
	h.ensure()
	addr := strings.TrimPrefix(h.url(), "http://")
	body := messagesBody(false, "x")
	// Meridian answers only requests for its own name (a page reached
	// by another name is refused: DNS rebinding), so each request names
	// the host's address, as a client would; one names another host.
	host := "Host: " + addr + "\r\n"
	cases := []struct {
		name, req string
		ok        func(status int, answer string) bool
	}{
		{"HTTP/1.0 without Host", "GET /health HTTP/1.0\r\n\r\n", is(200)},
		{"HTTP/1.1 without Host", "GET /health HTTP/1.1\r\n\r\n", is(400)},
		{"Content-Length and chunked both", "POST /v1/messages HTTP/1.1\r\n" + host + "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", in(400, 499)},
		{"two Content-Lengths", "POST /v1/messages HTTP/1.1\r\n" + host + "Content-Length: 5\r\nContent-Length: 6\r\n\r\nabcdef", is(400)},
		{"a bad chunk size", "POST /v1/messages HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\nzz\r\nabc\r\n0\r\n\r\n", in(400, 499)},
		{"a method nobody knows", "BREW /v1/messages HTTP/1.1\r\n" + host + "\r\n", is(405)},
		{"a 100 KiB path", "GET /" + strings.Repeat("a", 100<<10) + " HTTP/1.1\r\n" + host + "\r\n", in(400, 431)},
		{"a header with a bare CR", "GET /health HTTP/1.1\r\n" + host + "X-A: a\rb\r\n\r\n", is(400)},
		{"an absolute URI of another host", "GET http://evil.example/health HTTP/1.1\r\nHost: evil.example\r\n\r\n", notRedirectOff},
		{"a path of two slashes", "GET //evil.example/?key=k HTTP/1.1\r\n" + host + "\r\n", notRedirectOff},
		{"Expect: 100-continue", "POST /v1/messages HTTP/1.1\r\n" + host + "Expect: 100-continue\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}", in(100, 400)},
		{"two requests pipelined", "GET /health HTTP/1.1\r\n" + host + "\r\nGET /health HTTP/1.1\r\n" + host + "\r\n", func(s int, a string) bool { return s == 200 && strings.Count(a, "HTTP/1.1 200") == 2 }},
		{"a body shorter than its length", fmt.Sprintf("POST /v1/messages HTTP/1.1\r\n"+host+"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body)+10, body), is(408)},
		{"another name, a body that never comes", fmt.Sprintf("POST /v1/messages HTTP/1.1\r\nHost: rebound.example\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body)+10, body), is(403)},
		{"a 404 whose body never comes", fmt.Sprintf("POST /v1/nope HTTP/1.1\r\n"+host+"Content-Length: %d\r\n\r\n{", 100), is(404)},
		{"headers that never end", "GET /health HTTP/1.1\r\n" + host + "X-Slow: 1\r\n", func(s int, a string) bool { return s == 0 || s == 408 }},
	}
	var got []string
	for _, cs := range cases {
		status, answer, took := rawHTTP(addr, cs.req, 20*time.Second)
		if !cs.ok(status, answer) || (status != 0 && took > bodyTimeout+2*time.Second) {
			t.Errorf("%s: %d after %v: %.300s", cs.name, status, took, answer)
		}
		if strings.Contains(answer, "/tmp/") || strings.Contains(answer, "goroutine ") {
			t.Errorf("%s: the answer shows a path or a stack: %.300s", cs.name, answer)
		}
		got = append(got, fmt.Sprintf("%s %d (%v)", cs.name, status, took.Round(10*time.Millisecond)))
	}
	if getStatus(h.url()+"/health") != http.StatusOK {
		t.Error("the host is not healthy after the oddities")
	}
	f.add(t, "%s", strings.Join(got, "; "))
}

func is(want int) func(int, string) bool { return func(s int, _ string) bool { return s == want } }

func in(lo, hi int) func(int, string) bool {
	return func(s int, _ string) bool { return s >= lo && s <= hi }
}

// notRedirectOff: any answer but a redirect to another origin.
func notRedirectOff(status int, answer string) bool {
	if status == 0 {
		return false
	}
	for _, line := range strings.Split(answer, "\r\n") {
		if loc, ok := strings.CutPrefix(strings.ToLower(line), "location: "); ok && (strings.HasPrefix(loc, "//") || strings.Contains(loc, "://")) {
			return false
		}
	}
	return true
}
