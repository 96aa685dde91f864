package httpapi

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// A pause refuses new turns with a wait while the running one finishes,
// keeps everything else answering, and ends when resumed.
func TestPauseRefusesNewTurnsUntilResumed(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	s, err := New(Config{Listen: Listen{Addr: "127.0.0.1:0"}, Models: noModels()})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	first := true
	mux.HandleFunc("POST /v1/messages", func(w http.ResponseWriter, r *http.Request) {
		if first {
			first = false
			close(started)
			<-release
		}
		_, _ = io.WriteString(w, "answered")
	})
	mux.HandleFunc("POST /v1/admin/pause", s.paused.set(true))
	mux.HandleFunc("POST /v1/admin/resume", s.paused.set(false))
	mux.HandleFunc("GET /panel", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "page") })
	s.handler = s.track(s.paused.hold(mux))
	url, stop, done := serving(t, s)
	defer func() { stop(); <-done }()

	post := func(path string) (*http.Response, string) {
		resp, err := http.Post(url+path, "application/json", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	running := make(chan string, 1)
	go func() { _, b := post("/v1/messages"); running <- b }()
	<-started
	if resp, _ := post("/v1/admin/pause"); resp.StatusCode != http.StatusOK {
		t.Fatalf("pause: %d", resp.StatusCode)
	}
	for _, path := range []string{"/v1/messages", "/chat/completions", "/v1/responses", "/antigravity/v1/messages"} {
		resp, body := post(path)
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "30" || !strings.Contains(body, "paused") {
			t.Fatalf("a new turn on %s while paused: %d Retry-After %q %s", path, resp.StatusCode, resp.Header.Get("Retry-After"), body)
		}
	}
	if resp, err := http.Get(url + "/panel"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("a page while paused: %v %v", resp, err)
	}
	close(release)
	if got := <-running; got != "answered" {
		t.Fatalf("the turn running when the pause began got %q", got)
	}
	if resp, _ := post("/v1/admin/resume"); resp.StatusCode != http.StatusOK {
		t.Fatalf("resume: %d", resp.StatusCode)
	}
	if resp, body := post("/v1/messages"); resp.StatusCode != http.StatusOK || body != "answered" {
		t.Fatalf("a turn after resume: %d %s", resp.StatusCode, body)
	}
}
