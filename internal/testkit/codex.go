package testkit

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
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
	return pinned(t, "MERIDIAN_TEST_CODEX", "./scripts/install-codex", "codex")
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
// it: POST /v1/responses streamed, answered in the events the API sends
// (created, output items added, content parts, text or argument deltas,
// items done, completed with usage). By default every answer is one
// assistant message of the same text; Script decides each answer.
type ResponsesUpstream struct {
	URL string // …/v1
	// Script, when set before the first request, decides the answer to
	// request n (1-based) from its body.
	Script func(n int, body map[string]any) ResponsesReply
	mu     sync.Mutex
	// requests are the bodies received, in order.
	requests []map[string]any
	reply    []string
	// cancelled counts answers whose client went away before their end.
	cancelled int
}

// ResponsesReply is one scripted answer.
type ResponsesReply struct {
	Text  []string        // an assistant message streamed as these deltas (none: no message)
	Calls []ResponsesCall // function calls after the message
	// Status, when not 0 or 200, answers with that HTTP error instead
	// (Body as its JSON, or a generic error).
	Status int
	// Header is sent with the answer, error or stream (the plan's
	// rate-limit headers, a Retry-After).
	Header http.Header
	Body   string
	// Hold, when set, is waited on (or the client's going away) after the
	// first delta: a stream that stalls mid-answer.
	Hold <-chan struct{}
}

// ResponsesCall is one function call an answer carries.
type ResponsesCall struct {
	ID        string // call id; call_<n>_<i> when empty
	Name      string
	Namespace string // the tool's namespace ("" for none)
	Arguments string // JSON text
}

// NewResponsesUpstream starts the fake; each answer streams reply's
// pieces as text deltas, unless Script is set.
func NewResponsesUpstream(t testing.TB, reply ...string) *ResponsesUpstream {
	t.Helper()
	u := &ResponsesUpstream{reply: reply}
	srv := httptest.NewServer(http.HandlerFunc(u.serve))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	u.URL = srv.URL + "/v1"
	return u
}

// ServeResponses serves a fake Responses upstream answering by script on
// ln, for a command of its own (fakeresponses); it returns when ln closes.
func ServeResponses(ln net.Listener, script func(n int, body map[string]any) ResponsesReply) error {
	u := &ResponsesUpstream{Script: script}
	return http.Serve(ln, http.HandlerFunc(u.serve))
}

// Requests are the request bodies received so far.
func (u *ResponsesUpstream) Requests() []map[string]any {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]map[string]any(nil), u.requests...)
}

// Cancelled is how many answers lost their client before their end.
func (u *ResponsesUpstream) Cancelled() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.cancelled
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
	script := u.Script
	u.mu.Unlock()
	reply := ResponsesReply{Text: u.reply}
	if script != nil {
		reply = script(n, body)
	}
	if reply.Status != 0 && reply.Status != http.StatusOK {
		maps.Copy(w.Header(), reply.Header)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(reply.Status)
		if reply.Body == "" {
			reply.Body = fmt.Sprintf(`{"error":{"type":"upstream_error","message":"the fake upstream answers %d"}}`, reply.Status)
		}
		_, _ = io.WriteString(w, reply.Body)
		return
	}
	if !u.stream(w, r, n, reply) {
		u.mu.Lock()
		u.cancelled++
		u.mu.Unlock()
	}
}

// stream writes one answer's events; false when the client went away
// before its end.
func (u *ResponsesUpstream) stream(w http.ResponseWriter, r *http.Request, n int, reply ResponsesReply) bool {
	maps.Copy(w.Header(), reply.Header)
	w.Header().Set("Content-Type", "text/event-stream")
	flusher, _ := w.(http.Flusher)
	event := func(typ string, v map[string]any) bool {
		v["type"] = typ
		j, _ := json.Marshal(v)
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, j); err != nil {
			return false
		}
		if flusher != nil {
			flusher.Flush()
		}
		return r.Context().Err() == nil
	}
	resp := map[string]any{"id": fmt.Sprintf("resp_%d", n), "object": "response", "status": "in_progress", "output": []any{}}
	if !event("response.created", map[string]any{"response": resp}) {
		return false
	}
	var output []any
	outTokens := 0
	if len(reply.Text) > 0 {
		itemID := fmt.Sprintf("msg_%d", n)
		idx := len(output)
		event("response.output_item.added", map[string]any{"output_index": idx,
			"item": map[string]any{"id": itemID, "type": "message", "role": "assistant", "status": "in_progress", "content": []any{}}})
		event("response.content_part.added", map[string]any{"output_index": idx, "item_id": itemID, "content_index": 0,
			"part": map[string]any{"type": "output_text", "text": ""}})
		var text string
		for i, d := range reply.Text {
			text += d
			if !event("response.output_text.delta", map[string]any{"output_index": idx, "item_id": itemID, "content_index": 0, "delta": d}) {
				return false
			}
			if i == 0 && reply.Hold != nil {
				select {
				case <-reply.Hold:
				case <-r.Context().Done():
					return false
				}
			}
		}
		item := map[string]any{"id": itemID, "type": "message", "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}}
		event("response.output_item.done", map[string]any{"output_index": idx, "item": item})
		output = append(output, item)
		outTokens += len(reply.Text)
	}
	for i, c := range reply.Calls {
		idx := len(output)
		if c.ID == "" {
			c.ID = fmt.Sprintf("call_%d_%d", n, i)
		}
		item := map[string]any{"id": fmt.Sprintf("fc_%d_%d", n, i), "type": "function_call", "status": "completed",
			"call_id": c.ID, "name": c.Name, "arguments": c.Arguments}
		if c.Namespace != "" {
			item["namespace"] = c.Namespace
		}
		added := maps.Clone(item)
		added["status"], added["arguments"] = "in_progress", ""
		event("response.output_item.added", map[string]any{"output_index": idx, "item": added})
		event("response.function_call_arguments.delta", map[string]any{"output_index": idx, "item_id": item["id"], "delta": c.Arguments})
		event("response.function_call_arguments.done", map[string]any{"output_index": idx, "item_id": item["id"], "arguments": c.Arguments})
		event("response.output_item.done", map[string]any{"output_index": idx, "item": item})
		output = append(output, item)
		outTokens++
	}
	resp["status"], resp["output"] = "completed", output
	resp["usage"] = map[string]any{"input_tokens": 10 * n, "output_tokens": outTokens, "total_tokens": 10*n + outTokens,
		"input_tokens_details": map[string]any{"cached_tokens": 0}, "output_tokens_details": map[string]any{"reasoning_tokens": 0}}
	return event("response.completed", map[string]any{"response": resp})
}
