package inspector

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/capture"
	"github.com/meridian-gw/meridian/internal/store"
	"github.com/meridian-gw/meridian/internal/store/sqlite/sqlitetest"
	"github.com/meridian-gw/meridian/internal/telemetry"
)

func captures(t *testing.T) store.Captures {
	t.Helper()
	return sqlitetest.Open(t).Captures
}

// What a request hands over is redacted, kept, listed without its parts,
// read back whole and exported as JSON lines.
func TestKeptCapturesReadBack(t *testing.T) {
	st, ctx := captures(t), context.Background()
	in := Open(Config{Store: st, Host: "h1", Redactor: capture.NewRedactor("admin-SECRET-key")})
	now := time.Now().Truncate(time.Millisecond)
	d := capture.NewDraft(capture.Content, http.Header{"Authorization": {"Bearer admin-SECRET-key"}})
	d.Request([]byte(`{"model":"m","messages":[{"role":"user","content":"key sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv"}]}`))
	d.Wrote(map[string]any{"content": "hi"})
	d.Answer([]byte(`{"content":"hello"}`))
	in.Keep(d, telemetry.Record{Time: now, API: "messages", Model: "m", Key: "ci", Status: 200, Route: "sticky", Verdict: "new"})
	in.Keep(capture.NewDraft(capture.Metadata, nil), telemetry.Record{Time: now, API: "chat", Model: "m", Status: 500})
	in.Keep(capture.NewDraft(capture.Off, nil), telemetry.Record{Time: now, API: "chat"})
	in.Close()
	list, err := List(ctx, st, Filter{}, 0, 10)
	if err != nil || len(list) != 2 || list[0].Record.Status != 500 || list[1].Record.Route != "sticky" || list[1].Request != nil || list[1].Host != "h1" {
		t.Fatalf("list %+v %v", list, err)
	}
	e, found, err := Get(ctx, st, list[1].ID)
	if err != nil || !found || !strings.Contains(string(e.Request), "key [REDACTED]") || e.Headers["Authorization"] != capture.Redacted ||
		len(e.Written) != 1 || e.Answer != `{"content":"hello"}` || e.Record.Verdict != "new" {
		t.Fatalf("get %+v %v", e, err)
	}
	if _, found, err := Get(ctx, st, 1<<40); found || err != nil {
		t.Fatalf("a capture that is not there: %v %v", found, err)
	}
	var out bytes.Buffer
	n, err := Export(ctx, st, now.Add(-time.Minute), &out)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if err != nil || n != 2 || len(lines) != 2 || strings.Contains(out.String(), "SECRET") || strings.Contains(out.String(), "AbCdEfGh") {
		t.Fatalf("export %d %v:\n%s", n, err, out.String())
	}
	var first Entry
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil || first.Record.API != "messages" {
		t.Fatalf("first line %v %+v", err, first)
	}
}
