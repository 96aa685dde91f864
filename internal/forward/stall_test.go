package forward

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/dispatch"
	"github.com/meridian-gw/meridian/internal/store"
	"github.com/meridian-gw/meridian/internal/telemetry"
)

// alivePeers says every host still beats.
type alivePeers struct{ unreachable int }

func (*alivePeers) Self() store.Owner { return store.Owner{} }
func (*alivePeers) Host(context.Context, store.Owner) (store.Host, bool, error) {
	return store.Host{}, true, nil
}
func (*alivePeers) Hosts(context.Context) ([]store.Host, error) { return nil, nil }
func (p *alivePeers) Unreachable(context.Context, store.Owner)  { p.unreachable++ }

// A holder that still beats but sends nothing at all (not even a ping)
// for Stall in the middle of its answer is cut with its own error — a
// 504 timeout_error saying it stalled — not taken for gone.
func TestAStalledHolderIsCutWithItsOwnError(t *testing.T) {
	holder := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"m\",\"usage\":{\"input_tokens\":1,\"output_tokens\":0}}}\n\n"))
		w.(http.Flusher).Flush()
		<-r.Context().Done() // stuck: no more bytes, no pings
	}))
	defer holder.Close()
	peers := &alivePeers{}
	f := New("key", "host-b", peers, time.Hour, nil)
	f.Stall = 300 * time.Millisecond
	f.Log = slog.New(slog.DiscardHandler)
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "/v1/messages", strings.NewReader(`{}`))
	start := time.Now()
	if !f.Forward(rec, req, []byte(`{}`), dispatch.Target{Host: "host-a", Addr: holder.URL}, Call{API: telemetry.APIMessages}) {
		t.Fatal("the forward says the holder could not be reached")
	}
	body := rec.Body.String()
	if !strings.Contains(body, "event: error") || !strings.Contains(body, `"type":"timeout_error"`) || !strings.Contains(body, "(host-a) stalled: it is alive but sent nothing for 300ms") {
		t.Fatalf("the client got:\n%s", body)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("the stall was noticed after %s", took)
	}
	if peers.unreachable != 0 {
		t.Fatal("a stalled holder was taken for gone")
	}
}
