package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// Serve returns only after every handler has: one still joining what it
// started after its connection was closed is waited for.
func TestServeWaitsForHandlers(t *testing.T) {
	s, err := New(Config{Addr: "127.0.0.1:0", DrainTimeout: 20 * time.Millisecond})
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
	ln, err := s.Listen()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	go func() {
		if resp, err := http.Get("http://" + ln.Addr().String() + "/slow"); err == nil {
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

// drainServer serves handler with the drain settings, and returns its
// address, the context that starts the drain, and Serve's result.
func drainServer(t *testing.T, drain time.Duration, hurry chan struct{}, handler http.Handler) (string, context.CancelFunc, <-chan error) {
	t.Helper()
	s, err := New(Config{Addr: "127.0.0.1:0", DrainTimeout: drain, Hurry: hurry})
	if err != nil {
		t.Fatal(err)
	}
	s.handler = s.track(handler)
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
	case <-time.After(10 * time.Second):
		t.Fatal("the drain went on after Hurry")
	}
	if c, _ := cause.Load().(error); !errors.Is(c, errShutdown) {
		t.Fatalf("the request was cancelled with %v, want the shutdown", c)
	}
}
