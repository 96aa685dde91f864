package alerts

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/store"
	"github.com/meridian-gw/meridian/internal/testkit"
)

// memory is a store of sinks and claims, as the store's conformance suite
// has them behave.
type memory struct {
	mu    sync.Mutex
	sinks []store.AlertSink
	sent  map[string]store.SentAlert
}

func (m *memory) AddSink(_ context.Context, s store.AlertSink) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sinks = append(m.sinks, s)
	return nil
}

func (m *memory) Sinks(context.Context) ([]store.AlertSink, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]store.AlertSink(nil), m.sinks...), nil
}

func (m *memory) RemoveSink(context.Context, string) error { return nil }

func (m *memory) Claim(_ context.Context, a store.SentAlert, _ time.Duration) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.sent[a.Key]; ok {
		return false, nil
	}
	m.sent[a.Key] = a
	return true, nil
}

func (m *memory) Recent(context.Context, int) ([]store.SentAlert, error) { return nil, nil }

// receiver counts the posts it took, refusing the first refuse of them.
type receiver struct {
	mu     sync.Mutex
	refuse int
	got    []map[string]any
	signed bool
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.refuse > 0 {
		r.refuse--
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	var v map[string]any
	_ = json.Unmarshal(body, &v)
	r.got = append(r.got, v)
	r.signed = req.Header.Get(HeaderSignature) == "sha256="+Sign("s3cret", req.Header.Get(HeaderTimestamp), body)
	w.WriteHeader(http.StatusNoContent)
}

func (r *receiver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.got)
}

// Two notifiers on one store (two hosts) see the same crossing, over and
// over: each sink gets it once, in its format and signed; a sink that
// refuses at first gets it on a later try.
func TestEachCrossingIsSentOnce(t *testing.T) {
	mem := &memory{sent: map[string]store.SentAlert{}}
	js, slack := &receiver{refuse: 2}, &receiver{}
	for name, r := range map[string]*receiver{"js": js, "slack": slack} {
		srv := httptest.NewServer(r)
		t.Cleanup(srv.Close)
		format := FormatJSON
		if name == "slack" {
			format = FormatSlack
		}
		_ = mem.AddSink(context.Background(), store.AlertSink{Name: name, URL: srv.URL, Format: format, Secret: "s3cret"})
	}
	ctx, cancel := context.WithCancel(context.Background())
	var running sync.WaitGroup
	var hosts []*Notifier
	for _, h := range []string{"h1", "h2"} {
		n := New(Config{Store: mem, Host: h, Backoff: 10 * time.Millisecond})
		hosts = append(hosts, n)
		running.Go(func() { n.Run(ctx) })
	}
	f := store.PlanFigures{Windows: []store.PlanWindow{{Name: "five_hour", Used: 0.84, ResetsAt: time.Now().Add(time.Hour)}}}
	for range 5 {
		for _, n := range hosts {
			n.Figures("pro", f)
		}
	}
	if err := testkit.WaitFor(5*time.Second, func() error {
		if js.count() < 1 || slack.count() < 1 {
			return context.DeadlineExceeded
		}
		return nil
	}); err != nil {
		t.Fatalf("posts: json %d, slack %d", js.count(), slack.count())
	}
	time.Sleep(100 * time.Millisecond) // room for a second post that must not come
	cancel()
	running.Wait()
	if js.count() != 1 || slack.count() != 1 || !js.signed || !slack.signed {
		t.Fatalf("json %d (signed %v), slack %d (signed %v)", js.count(), js.signed, slack.count(), slack.signed)
	}
	if js.got[0]["kind"] != KindWindow || js.got[0]["profile"] != "pro" || slack.got[0]["text"] == nil {
		t.Fatalf("bodies %v %v", js.got[0], slack.got[0])
	}
}

// Raise never waits: with the queue full, the rest are dropped.
func TestRaiseNeverWaits(t *testing.T) {
	n := New(Config{Store: &memory{sent: map[string]store.SentAlert{}}})
	done := make(chan struct{})
	go func() {
		for i := range queueSize * 3 {
			n.Bench("p", time.Unix(int64(i)*3600, 0))
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Raise waited for a queue nobody empties")
	}
}

func TestSinkAddresses(t *testing.T) {
	for raw, ok := range map[string]bool{
		"https://hooks.example.com/x": true, "http://127.0.0.1:9/hook": true, "http://localhost:9/": true,
		"http://hooks.example.com/x": false, "ftp://x/": false, "/relative": false,
	} {
		if err := CheckURL(raw); (err == nil) != ok {
			t.Errorf("%s: %v", raw, err)
		}
	}
}
