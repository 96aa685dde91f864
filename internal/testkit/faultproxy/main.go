// Command faultproxy stands between a real client and meridian in
// scripts/try-clients and loses one answer: the first request whose body
// holds the -cut marker (and carries the -only header) is forwarded and answered in full by meridian,
// then the client's connection is closed without a byte of it, as a
// dropped network path would. Everything else streams through. It prints
// its URL on stdout and one line per request on stderr.
package main

import (
	"bytes"
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
)

func main() {
	target := flag.String("target", "", "meridian's URL")
	marker := flag.String("cut", "CUT_ONCE", "lose the answer to the first request whose body holds this")
	only := flag.String("only", "", "and, as NAME=VALUE, that carries this header")
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
		if !cut {
			log.Printf("passed %s %s id=%q", r.Method, r.URL.Path, id)
			proxy.ServeHTTP(w, r)
			return
		}
		// Let meridian finish the turn, then drop the client.
		out := r.Clone(r.Context())
		out.URL.Scheme, out.URL.Host, out.RequestURI = u.Scheme, u.Host, ""
		resp, err := http.DefaultTransport.RoundTrip(out)
		if err == nil {
			n, _ := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			log.Printf("cut %s %s id=%q: meridian answered %d (%d bytes), the client got nothing", r.Method, r.URL.Path, id, resp.StatusCode, n)
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
