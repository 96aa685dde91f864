// Command faultproxy stands between a real client and meridian (in
// scripts/try-clients and the OpenCode plugin's test) and loses one
// answer: the first request whose body holds the -cut marker (and carries
// the -only header) is forwarded and answered in full by meridian, then
// the client's connection is closed without a byte of it, as a dropped
// network path would — or, with -partial, after the answer's events up to
// the first that holds that text, as a path that breaks mid-stream would.
// Everything else streams through. It prints its URL on stdout and one
// line per request on stderr.
package main

import (
	"bytes"
	"crypto/sha256"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"
)

func main() {
	target := flag.String("target", "", "meridian's URL")
	marker := flag.String("cut", "CUT_ONCE", "lose the answer to the first request whose body holds this")
	only := flag.String("only", "", "and, as NAME=VALUE, that carries this header")
	partial := flag.String("partial", "", "give the client the answer's events up to the first that holds this, then break off")
	flag.Parse()
	u, err := url.Parse(*target)
	if err != nil || u.Host == "" {
		log.Fatalf("faultproxy: -target %q: %v", *target, err)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	proxy.FlushInterval = -1
	var once sync.Once
	handler := func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		cut := false
		name, value, _ := strings.Cut(*only, "=")
		if bytes.Contains(body, []byte(*marker)) && (name == "" || r.Header.Get(name) == value) {
			once.Do(func() { cut = true })
		}
		id := r.Header.Get("X-Meridian-Request-Id")
		sum := sha256.Sum256(body)
		id += fmt.Sprintf(" body=%x", sum[:6]) // a request sent again has the same
		if !cut {
			log.Printf("passed %s %s id=%q cache=%q", r.Method, r.URL.Path, id, r.Header.Get("Cache-Control"))
			proxy.ServeHTTP(w, r)
			return
		}
		// Let meridian finish the turn, then drop the client.
		out := r.Clone(r.Context())
		out.URL.Scheme, out.URL.Host, out.RequestURI = u.Scheme, u.Host, ""
		resp, err := http.DefaultTransport.RoundTrip(out)
		if err == nil {
			answer, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			given := 0
			if *partial != "" {
				if at := bytes.Index(answer, []byte(*partial)); at >= 0 {
					if end := bytes.Index(answer[at:], []byte("\n\n")); end >= 0 {
						given = at + end + 2
					}
				}
				for k, v := range resp.Header {
					w.Header()[k] = v
				}
				w.Header().Del("Content-Length")
				w.WriteHeader(resp.StatusCode)
				_, _ = w.Write(answer[:given])
				_ = http.NewResponseController(w).Flush()
				// The client reads what it was given before the path breaks.
				time.Sleep(300 * time.Millisecond)
			}
			log.Printf("cut %s %s id=%q: meridian answered %d (%d bytes), the client got %d", r.Method, r.URL.Path, id, resp.StatusCode, len(answer), given)
		}
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close()
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("http://" + ln.Addr().String())
	log.Fatal(http.Serve(ln, http.HandlerFunc(handler)))
}
