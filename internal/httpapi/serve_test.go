package httpapi

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
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
