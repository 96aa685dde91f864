package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/dispatch"
	"github.com/meridian-gw/meridian/internal/testkit"
)

// Serve returns only after every handler has: one still joining what it
// started after its connection was closed is waited for.
func TestServeWaitsForHandlers(t *testing.T) {
	s, err := New(Config{Listen: Listen{Addr: "127.0.0.1:0", DrainTimeout: 20 * time.Millisecond}, Models: noModels()})
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	var finished atomic.Bool
	s.handler = s.track(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-r.Context().Done()
		time.Sleep(200 * time.Millisecond) // joining a process that takes its time to exit
		finished.Store(true)
	}))
	base, cancel, done := serving(t, s)
	go func() {
		if resp, err := http.Get(base + "/slow"); err == nil {
			resp.Body.Close()
		}
	}()
	<-started
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !finished.Load() {
		t.Fatal("Serve returned while a handler still ran")
	}
}

// A handler that never returns, even cancelled (wedged on a process that
// ignores every signal), does not keep Serve from returning: it gives up
// after its last wait and names the request in its log.
func TestServeGivesUpOnAWedgedHandler(t *testing.T) {
	var log testkit.Log
	s, err := New(Config{Listen: Listen{Addr: "127.0.0.1:0", DrainTimeout: 20 * time.Millisecond}, Models: noModels(),
		Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	s.lastWait = 200 * time.Millisecond
	started, wedged := make(chan struct{}), make(chan struct{})
	defer close(wedged)
	s.handler = s.track(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-wedged
	}))
	base, cancel, done := serving(t, s)
	go func() {
		if resp, err := http.Get(base + "/wedged"); err == nil {
			resp.Body.Close()
		}
	}()
	<-started
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(testkit.Scale(10 * time.Second)):
		t.Fatal("Serve waited on for a wedged handler")
	}
	if !strings.Contains(log.String(), "GET /wedged") {
		t.Fatalf("the log does not name the wedged request:\n%s", log.String())
	}
}

// drainServer serves handler with the drain settings, and returns its
// address, the context that starts the drain, and Serve's result.
func drainServer(t *testing.T, drain time.Duration, hurry chan struct{}, handler http.Handler) (string, context.CancelFunc, <-chan error) {
	t.Helper()
	s, err := New(Config{Listen: Listen{Addr: "127.0.0.1:0", DrainTimeout: drain, Hurry: hurry}, Models: noModels()})
	if err != nil {
		t.Fatal(err)
	}
	s.handler = s.track(handler)
	return serving(t, s)
}

// serving serves s on its own listener until cancel, and returns its
// address and Serve's result.
func serving(t *testing.T, s *Server) (string, context.CancelFunc, <-chan error) {
	t.Helper()
	ln, err := s.Listen()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	return "http://" + ln.Addr().String(), cancel, done
}

// During the drain a running request finishes undisturbed while a new one
// is refused with 503 and a wait; Serve returns when the last one ends.
func TestDrainFinishesRunningRequestsAndRefusesNewOnes(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	url, drain, done := drainServer(t, time.Minute, nil, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		select {
		case <-release:
			_, _ = w.Write([]byte("finished"))
		case <-r.Context().Done():
		}
	}))
	got := make(chan string, 1)
	go func() {
		resp, err := http.Get(url + "/slow")
		if err != nil {
			got <- err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		got <- string(b)
	}()
	<-started
	drain()
	var resp *http.Response
	if err := testkit.WaitFor(5*time.Second, func() error {
		var err error
		if resp, err = http.Post(url+"/v1/messages", "application/json", strings.NewReader("{}")); err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable {
			return fmt.Errorf("a new request during the drain got %d", resp.StatusCode)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if resp.Header.Get("Retry-After") == "" {
		t.Fatal("the 503 carries no Retry-After")
	}
	select {
	case err := <-done:
		t.Fatalf("Serve returned while a request ran: %v", err)
	default:
	}
	close(release)
	if body := <-got; body != "finished" {
		t.Fatalf("the running request got %q", body)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// A second signal (Hurry) ends the drain at once: the running request is
// cancelled rather than waited for.
func TestHurryEndsTheDrain(t *testing.T) {
	started := make(chan struct{})
	var cause atomic.Value
	hurry := make(chan struct{})
	url, drain, done := drainServer(t, time.Hour, hurry, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-r.Context().Done()
		cause.Store(context.Cause(r.Context()))
	}))
	go func() {
		if resp, err := http.Get(url + "/slow"); err == nil {
			resp.Body.Close()
		}
	}()
	<-started
	drain()
	close(hurry)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(testkit.Scale(10 * time.Second)):
		t.Fatal("the drain went on after Hurry")
	}
	if c, _ := cause.Load().(error); !errors.Is(c, errShutdown) {
		t.Fatalf("the request was cancelled with %v, want the shutdown", c)
	}
}

// Open mounts check their own callers: no API key, no request log (their
// paths hold secrets), no drain (agy holds a stream open on them), but the
// host and origin guards, and only callers on this machine.
func TestOpenMounts(t *testing.T) {
	var log testkit.Log
	held := make(chan struct{})
	open := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/secret-token/hold" {
			close(held)
			<-r.Context().Done()
			return
		}
		fmt.Fprint(w, "open:"+r.URL.Path)
	})
	s, err := New(Config{Listen: Listen{Addr: "127.0.0.1:0", DrainTimeout: time.Minute}, Access: Access{AdminKey: "the-key"}, Models: noModels(),
		Open:   []Mount{{Prefix: "/open", Handler: open}},
		Logger: slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	base, cancel, done := serving(t, s)
	get := func(path string, header ...string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, base+path, nil)
		for i := 0; i+1 < len(header); i += 2 {
			if header[i] == "Host" {
				req.Host = header[i+1]
				continue
			}
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/open/secret-token/mcp"); code != 200 || body != "open:/secret-token/mcp" {
		t.Fatalf("open mount without a key: %d %s", code, body)
	}
	if code, _ := get("/v1/models"); code != http.StatusUnauthorized {
		t.Fatalf("/v1/models without a key: %d", code)
	}
	if code, _ := get("/open/secret-token/mcp", "Host", "evil.example"); code != http.StatusForbidden {
		t.Fatalf("a rebound host name: %d", code)
	}
	if code, _ := get("/open/secret-token/mcp", "Origin", "https://evil.example"); code != http.StatusForbidden {
		t.Fatalf("another origin: %d", code)
	}
	// From another machine: not found, as if nothing were there.
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/open/secret-token/mcp", nil)
	req.RemoteAddr = "192.0.2.7:4000"
	local, _ := net.ResolveTCPAddr("tcp", strings.TrimPrefix(base, "http://"))
	req = req.WithContext(context.WithValue(req.Context(), http.LocalAddrContextKey, local))
	s.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusNotFound {
		t.Fatalf("a caller from elsewhere: %d", rec.Code)
	}
	// A stream held open does not hold the shutdown for the drain's minute.
	go func() {
		if resp, err := http.Get(base + "/open/secret-token/hold"); err == nil {
			resp.Body.Close()
		}
	}()
	<-held
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(testkit.Scale(30 * time.Second)):
		t.Fatal("an open mount's stream held the drain")
	}
	if strings.Contains(log.String(), "secret-token") {
		t.Fatalf("an open mount's path reached the log:\n%s", log.String())
	}
}

// Headers are bounded: a megabyte of one header, twenty thousand
// headers or a 900 KB cookie get 431 and run nothing; an SDK's headers,
// and one of 32 KiB, pass.
func TestHeadersAreBounded(t *testing.T) {
	ran := make(chan struct{}, 8)
	url, stop, done := drainServer(t, time.Second, nil, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ran <- struct{}{}
	}))
	defer func() { stop(); <-done }()
	send := func(set func(h http.Header)) int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, url+"/v1/messages", strings.NewReader("{}"))
		set(req.Header)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for name, set := range map[string]func(http.Header){
		"a 1 MiB header": func(h http.Header) { h.Set("X-Big", strings.Repeat("a", 1<<20)) },
		"20,000 headers": func(h http.Header) {
			for i := range 20000 {
				h.Set(fmt.Sprintf("X-H-%d", i), "v")
			}
		},
		"a 900 KB cookie": func(h http.Header) { h.Set("Cookie", "c="+strings.Repeat("b", 900_000)) },
	} {
		if got := send(set); got != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("%s: %d, want 431", name, got)
		}
	}
	select {
	case <-ran:
		t.Fatal("a request over the bound reached its handler")
	default:
	}
	if got := send(func(h http.Header) { h.Set("X-Fine", strings.Repeat("c", 32<<10)) }); got != http.StatusOK {
		t.Fatalf("a 32 KiB header: %d", got)
	}
}

// noModels is a dispatcher with no profile, for a server whose tests
// send it no model request.
func noModels() Models { return Models{Dispatch: dispatch.New(dispatch.Config{})} }
