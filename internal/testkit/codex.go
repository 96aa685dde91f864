package testkit

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// CodexPath is the pinned codex CLI (MERIDIAN_TEST_CODEX, which
// ./scripts/install-codex prints). Without it the test is skipped, except
// under CI, where that fails the run.
func CodexPath(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("MERIDIAN_TEST_CODEX"); p != "" {
		return p
	}
	Missing(t, "MERIDIAN_TEST_CODEX is not set (./scripts/install-codex prints the pinned codex's path)", "codex tests")
	return ""
}

// CodexHome writes a CODEX_HOME whose only provider is the fake Responses
// upstream at baseURL (…/v1), with the update check and analytics off:
// codex then reaches nothing else.
func CodexHome(t testing.TB, baseURL, model string) string {
	t.Helper()
	home := t.TempDir()
	config := fmt.Sprintf(`model = %q
model_provider = "fake"
check_for_update_on_startup = false

[model_providers.fake]
name = "fake"
base_url = %q
wire_api = "responses"

[analytics]
enabled = false
`, model, baseURL)
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	return home
}

// ResponsesUpstream is a fake of the OpenAI Responses API as codex calls
// it: POST /v1/responses streamed, answered with one assistant message
// in the events the API sends (created, output item added, content part
// added, text deltas, item done, completed with usage).
type ResponsesUpstream struct {
	URL string // …/v1
	mu  sync.Mutex
	// requests are the bodies received, in order.
	requests []map[string]any
	reply    []string
}

// NewResponsesUpstream starts the fake; each answer streams reply's
// pieces as text deltas.
func NewResponsesUpstream(t testing.TB, reply ...string) *ResponsesUpstream {
	t.Helper()
	u := &ResponsesUpstream{reply: reply}
	srv := httptest.NewServer(http.HandlerFunc(u.serve))
	t.Cleanup(srv.Close)
	u.URL = srv.URL + "/v1"
	return u
}

// Requests are the request bodies received so far.
func (u *ResponsesUpstream) Requests() []map[string]any {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]map[string]any(nil), u.requests...)
}

func (u *ResponsesUpstream) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/responses" {
		http.NotFound(w, r)
		return
	}
	var body map[string]any
	b, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(b, &body); err != nil {
		http.Error(w, "not JSON", http.StatusBadRequest)
		return
	}
	u.mu.Lock()
	u.requests = append(u.requests, body)
	n := len(u.requests)
	u.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	flusher, _ := w.(http.Flusher)
	event := func(typ string, v map[string]any) {
		v["type"] = typ
		j, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, j)
		if flusher != nil {
			flusher.Flush()
		}
	}
	respID, itemID := fmt.Sprintf("resp_%d", n), fmt.Sprintf("msg_%d", n)
	resp := map[string]any{"id": respID, "object": "response", "status": "in_progress", "output": []any{}}
	event("response.created", map[string]any{"response": resp})
	event("response.output_item.added", map[string]any{"output_index": 0,
		"item": map[string]any{"id": itemID, "type": "message", "role": "assistant", "status": "in_progress", "content": []any{}}})
	event("response.content_part.added", map[string]any{"output_index": 0, "item_id": itemID, "content_index": 0,
		"part": map[string]any{"type": "output_text", "text": ""}})
	var text string
	for _, d := range u.reply {
		text += d
		event("response.output_text.delta", map[string]any{"output_index": 0, "item_id": itemID, "content_index": 0, "delta": d})
	}
	item := map[string]any{"id": itemID, "type": "message", "role": "assistant", "status": "completed",
		"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}}
	event("response.output_item.done", map[string]any{"output_index": 0, "item": item})
	resp["status"], resp["output"] = "completed", []any{item}
	resp["usage"] = map[string]any{"input_tokens": 10 * n, "output_tokens": len(u.reply), "total_tokens": 10*n + len(u.reply),
		"input_tokens_details": map[string]any{"cached_tokens": 0}, "output_tokens_details": map[string]any{"reasoning_tokens": 0}}
	event("response.completed", map[string]any{"response": resp})
}
