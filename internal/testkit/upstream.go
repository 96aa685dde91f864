// Package testkit holds what the tests share: a fake Anthropic upstream the
// real claude CLI talks to, helpers that locate the pinned CLI, and scripted
// fake CLIs for fault injection.
package testkit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Reply scripts one answer of the fake upstream.
type Reply struct {
	// Status other than 0 or 200 makes the reply an API error.
	Status int
	// ErrorType and ErrorMessage fill the Anthropic error envelope of an
	// error reply ("rate_limit_error", "overloaded_error", …).
	ErrorType    string
	ErrorMessage string
	// Headers are added to the HTTP response (retry-after, rate-limit headers).
	Headers map[string]string

	// Thinking, if set, comes first as a thinking block.
	Thinking string
	// Text is streamed as text deltas of ChunkSize bytes (whole text if 0),
	// unless Chunks gives the deltas explicitly.
	Text      string
	Chunks    []string
	ChunkSize int
	// ToolUses follow the text as tool_use blocks.
	ToolUses []ToolUse
	// Search, if set, comes first: the API's own web search (a
	// server_tool_use block and its web_search_tool_result), as the API
	// answers a request offering the web_search server tool.
	Search *Search

	StopReason   string // default end_turn, or tool_use when ToolUses are set
	StopSequence string
	Usage        Usage

	// Delay holds the response before its headers; ChunkDelay paces events.
	Delay      time.Duration
	ChunkDelay time.Duration
	// BreakAfter > 0 cuts the connection after that many SSE events.
	BreakAfter int
	// StallAfter > 0 stops sending after that many SSE events and holds
	// the response open until the request is cancelled: an answer that
	// began and then went quiet.
	StallAfter int
	// Hang keeps the response open until the request is cancelled.
	Hang bool
	// Gate, if set, holds the response until it is closed (or the request
	// is cancelled), so a test decides when a model call ends.
	Gate <-chan struct{}
}

// Search is one web search the fake API ran: its query and results, or
// the error code it met (max_uses_exceeded, …).
type Search struct {
	Query   string
	Results []SearchResult
	Error   string
}

// SearchResult is one page a search found.
type SearchResult struct {
	Title string
	URL   string
}

// ToolUse is one scripted tool call.
type ToolUse struct {
	ID    string
	Name  string
	Input any
}

// Usage is the token usage a reply reports.
type Usage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
}

// Request is one recorded request to the fake upstream.
type Request struct {
	Method  string
	Path    string
	Query   string
	Header  http.Header
	Body    map[string]any
	RawBody []byte
	At      time.Time // when it arrived
}

// Stream reports whether the request asked for SSE.
func (r Request) Stream() bool { s, _ := r.Body["stream"].(bool); return s }

// Offers reports whether the request offers a tool of that name.
func (r Request) Offers(name string) bool {
	tools, _ := r.Body["tools"].([]any)
	for _, t := range tools {
		if tm, _ := t.(map[string]any); tm["name"] == name {
			return true
		}
	}
	return false
}

// ServerTool is the request's server tool (one with a type) of that name,
// nil if none: the CLI's own search request offers web_search.
func (r Request) ServerTool(name string) map[string]any {
	tools, _ := r.Body["tools"].([]any)
	for _, t := range tools {
		tm, _ := t.(map[string]any)
		if typ, _ := tm["type"].(string); typ != "" && typ != "custom" && tm["name"] == name {
			return tm
		}
	}
	return nil
}

// Messages returns the request's messages array.
func (r Request) Messages() []any { m, _ := r.Body["messages"].([]any); return m }

// LastUserText returns the concatenated text of the last user message,
// including text inside tool results.
func (r Request) LastUserText() string {
	msgs := r.Messages()
	for i := len(msgs) - 1; i >= 0; i-- {
		m, _ := msgs[i].(map[string]any)
		if m["role"] != "user" {
			continue
		}
		return textOf(m["content"])
	}
	return ""
}

// AllText returns every text of every message, in order, joined by newlines.
func (r Request) AllText() string {
	var b strings.Builder
	for _, m := range r.Messages() {
		mm, _ := m.(map[string]any)
		b.WriteString(textOf(mm["content"]))
		b.WriteByte('\n')
	}
	return b.String()
}

// SystemText returns the request's system prompt text.
func (r Request) SystemText() string { return textOf(r.Body["system"]) }

func textOf(v any) string {
	switch c := v.(type) {
	case string:
		return c
	case []any:
		var parts []string
		for _, b := range c {
			bm, _ := b.(map[string]any)
			switch bm["type"] {
			case "text":
				s, _ := bm["text"].(string)
				parts = append(parts, s)
			case "tool_result":
				parts = append(parts, textOf(bm["content"]))
			}
		}
		return strings.Join(parts, "\n")
	}
	return ""
}

// Responder picks the reply to a request.
type Responder func(Request) Reply

// Upstream is a scriptable fake of the Anthropic Messages API.
type Upstream struct {
	URL string

	srv *httptest.Server

	mu        sync.Mutex
	responder Responder
	queue     []Reply
	requests  []Request
	seq       int
}

// NewUpstream starts a fake upstream that answers "ok" until scripted, and
// stops it when the test ends.
func NewUpstream(t testing.TB) *Upstream {
	t.Helper()
	u := &Upstream{}
	u.srv = httptest.NewServer(http.HandlerFunc(u.serve))
	u.URL = u.srv.URL
	t.Cleanup(u.Close)
	return u
}

// StartUpstream starts a fake upstream on addr outside of a test, for
// trying real clients by hand; Close stops it.
func StartUpstream(addr string, r Responder) (*Upstream, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	u := &Upstream{responder: r}
	u.srv = &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(u.serve)}}
	u.srv.Start()
	u.URL = u.srv.URL
	return u, nil
}

// Close stops the server and closes open connections.
func (u *Upstream) Close() {
	u.srv.CloseClientConnections()
	u.srv.Close()
}

// Respond sets the function that answers requests once the queue is empty.
func (u *Upstream) Respond(r Responder) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.responder = r
}

// Enqueue adds replies that are used, in order, before the responder.
func (u *Upstream) Enqueue(replies ...Reply) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.queue = append(u.queue, replies...)
}

// Always answers every request with r.
func (u *Upstream) Always(r Reply) { u.Respond(func(Request) Reply { return r }) }

// When answers the requests whose text holds word with yes, the others
// with no (a Reply{Hang: true} on either side holds those requests open).
func When(word string, yes, no Reply) Responder {
	return func(r Request) Reply {
		if strings.Contains(r.AllText(), word) {
			return yes
		}
		return no
	}
}

// Requests returns the message requests received so far.
func (u *Upstream) Requests() []Request {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]Request(nil), u.requests...)
}

func (u *Upstream) next(req Request) (Reply, int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.requests = append(u.requests, req)
	u.seq++
	if len(u.queue) > 0 {
		r := u.queue[0]
		u.queue = u.queue[1:]
		return r, u.seq
	}
	if u.responder != nil {
		return u.responder(req), u.seq
	}
	return Reply{Text: "ok", Usage: Usage{InputTokens: 5, OutputTokens: 1}}, u.seq
}

func (u *Upstream) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodHead || r.URL.Path != "/v1/messages" || r.Method != http.MethodPost {
		// Connectivity probes and anything else: answer, record nothing.
		if r.Method == http.MethodHead {
			w.WriteHeader(http.StatusOK)
			return
		}
		http.NotFound(w, r)
		return
	}
	raw, _ := io.ReadAll(r.Body)
	req := Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), RawBody: raw, At: time.Now()}
	_ = json.Unmarshal(raw, &req.Body)
	reply, seq := u.next(req)

	if reply.Delay > 0 {
		select {
		case <-time.After(reply.Delay):
		case <-r.Context().Done():
			return
		}
	}
	if reply.Gate != nil {
		select {
		case <-reply.Gate:
		case <-r.Context().Done():
			return
		}
	}
	for k, v := range reply.Headers {
		w.Header().Set(k, v)
	}
	w.Header().Set("request-id", fmt.Sprintf("req_fake_%d", seq))
	if reply.Status != 0 && reply.Status != http.StatusOK {
		writeAPIError(w, reply)
		return
	}
	model, _ := req.Body["model"].(string)
	msg := buildMessage(reply, model, seq)
	if !req.Stream() {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(msg)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	sent := 0
	for _, ev := range streamEvents(reply, msg) {
		if reply.BreakAfter > 0 && sent >= reply.BreakAfter {
			breakConnection(w)
			return
		}
		if reply.StallAfter > 0 && sent >= reply.StallAfter {
			<-r.Context().Done()
			return
		}
		if reply.ChunkDelay > 0 && sent > 0 {
			select {
			case <-time.After(reply.ChunkDelay):
			case <-r.Context().Done():
				return
			}
		}
		data, _ := json.Marshal(ev)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev["type"], data)
		if flusher != nil {
			flusher.Flush()
		}
		sent++
	}
	if reply.Hang {
		<-r.Context().Done()
	}
}

// breakConnection drops the TCP connection without finishing the chunked
// body, which clients see as a broken stream.
func breakConnection(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}

func writeAPIError(w http.ResponseWriter, r Reply) {
	typ := r.ErrorType
	if typ == "" {
		typ = defaultErrorType(r.Status)
	}
	msg := r.ErrorMessage
	if msg == "" {
		msg = fmt.Sprintf("fake %d %s", r.Status, typ)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(r.Status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"type":  "error",
		"error": map[string]any{"type": typ, "message": msg},
	})
}

func defaultErrorType(status int) string {
	switch status {
	case 400:
		return "invalid_request_error"
	case 401:
		return "authentication_error"
	case 403:
		return "permission_error"
	case 404:
		return "not_found_error"
	case 413:
		return "request_too_large"
	case 429:
		return "rate_limit_error"
	case 529:
		return "overloaded_error"
	}
	return "api_error"
}

func buildMessage(r Reply, model string, seq int) map[string]any {
	var content []map[string]any
	if s := r.Search; s != nil {
		id := fmt.Sprintf("srvtoolu_fake_%d", seq)
		var result any = map[string]any{"type": "web_search_tool_result_error", "error_code": s.Error}
		if s.Error == "" {
			pages := []map[string]any{}
			for _, p := range s.Results {
				pages = append(pages, map[string]any{"type": "web_search_result", "url": p.URL, "title": p.Title,
					"encrypted_content": "enc_fake_" + p.URL, "page_age": "1 day ago"})
			}
			result = pages
		}
		content = append(content,
			map[string]any{"type": "server_tool_use", "id": id, "name": "web_search", "input": map[string]any{"query": s.Query}},
			map[string]any{"type": "web_search_tool_result", "tool_use_id": id, "content": result})
	}
	if r.Thinking != "" {
		content = append(content, map[string]any{"type": "thinking", "thinking": r.Thinking, "signature": "sig_fake"})
	}
	if text := r.fullText(); text != "" {
		content = append(content, map[string]any{"type": "text", "text": text})
	}
	for i, tu := range r.ToolUses {
		id := tu.ID
		if id == "" {
			id = fmt.Sprintf("toolu_fake_%d_%d", seq, i)
		}
		input := tu.Input
		if input == nil {
			input = map[string]any{}
		}
		content = append(content, map[string]any{"type": "tool_use", "id": id, "name": tu.Name, "input": input})
	}
	stop := r.StopReason
	if stop == "" {
		stop = "end_turn"
		if len(r.ToolUses) > 0 {
			stop = "tool_use"
		}
	}
	var stopSeq any
	if r.StopSequence != "" {
		stopSeq = r.StopSequence
	}
	if content == nil {
		content = []map[string]any{}
	}
	var usage any = r.Usage
	if r.Search != nil {
		b, _ := json.Marshal(r.Usage)
		var u map[string]any
		_ = json.Unmarshal(b, &u)
		u["server_tool_use"] = map[string]int{"web_search_requests": 1}
		usage = u
	}
	return map[string]any{
		"id":            fmt.Sprintf("msg_fake_%d", seq),
		"type":          "message",
		"role":          "assistant",
		"model":         model,
		"content":       content,
		"stop_reason":   stop,
		"stop_sequence": stopSeq,
		"usage":         usage,
	}
}

func (r Reply) fullText() string {
	if len(r.Chunks) > 0 {
		return strings.Join(r.Chunks, "")
	}
	return r.Text
}

func (r Reply) textChunks() []string {
	if len(r.Chunks) > 0 {
		return r.Chunks
	}
	if r.Text == "" {
		return nil
	}
	if r.ChunkSize <= 0 {
		return []string{r.Text}
	}
	var out []string
	for s := r.Text; s != ""; {
		n := min(r.ChunkSize, len(s))
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}

func streamEvents(r Reply, msg map[string]any) []map[string]any {
	start := map[string]any{}
	for k, v := range msg {
		start[k] = v
	}
	start["content"] = []any{}
	start["stop_reason"] = nil
	start["stop_sequence"] = nil
	startUsage := r.Usage
	startUsage.OutputTokens = min(1, r.Usage.OutputTokens)
	start["usage"] = startUsage

	evs := []map[string]any{{"type": "message_start", "message": start}}
	idx := 0
	content, _ := msg["content"].([]map[string]any)
	for _, block := range content {
		switch block["type"] {
		case "server_tool_use":
			js, _ := json.Marshal(block["input"])
			evs = append(evs,
				map[string]any{"type": "content_block_start", "index": idx, "content_block": map[string]any{"type": "server_tool_use", "id": block["id"], "name": block["name"], "input": map[string]any{}}},
				map[string]any{"type": "content_block_delta", "index": idx, "delta": map[string]any{"type": "input_json_delta", "partial_json": string(js)}},
				map[string]any{"type": "content_block_stop", "index": idx})
			idx++
		case "web_search_tool_result":
			evs = append(evs,
				map[string]any{"type": "content_block_start", "index": idx, "content_block": block},
				map[string]any{"type": "content_block_stop", "index": idx})
			idx++
		}
	}
	if r.Thinking != "" {
		evs = append(evs,
			map[string]any{"type": "content_block_start", "index": idx, "content_block": map[string]any{"type": "thinking", "thinking": "", "signature": ""}},
			map[string]any{"type": "content_block_delta", "index": idx, "delta": map[string]any{"type": "thinking_delta", "thinking": r.Thinking}},
			map[string]any{"type": "content_block_delta", "index": idx, "delta": map[string]any{"type": "signature_delta", "signature": "sig_fake"}},
			map[string]any{"type": "content_block_stop", "index": idx})
		idx++
	}
	if chunks := r.textChunks(); len(chunks) > 0 {
		evs = append(evs, map[string]any{"type": "content_block_start", "index": idx, "content_block": map[string]any{"type": "text", "text": ""}})
		for _, c := range chunks {
			evs = append(evs, map[string]any{"type": "content_block_delta", "index": idx, "delta": map[string]any{"type": "text_delta", "text": c}})
		}
		evs = append(evs, map[string]any{"type": "content_block_stop", "index": idx})
		idx++
	}
	for _, block := range content {
		if block["type"] != "tool_use" {
			continue
		}
		js, _ := json.Marshal(block["input"])
		half := len(js) / 2
		evs = append(evs,
			map[string]any{"type": "content_block_start", "index": idx, "content_block": map[string]any{"type": "tool_use", "id": block["id"], "name": block["name"], "input": map[string]any{}}},
			map[string]any{"type": "content_block_delta", "index": idx, "delta": map[string]any{"type": "input_json_delta", "partial_json": string(js[:half])}},
			map[string]any{"type": "content_block_delta", "index": idx, "delta": map[string]any{"type": "input_json_delta", "partial_json": string(js[half:])}},
			map[string]any{"type": "content_block_stop", "index": idx})
		idx++
	}
	endUsage := map[string]any{"output_tokens": r.Usage.OutputTokens}
	if r.Search != nil {
		endUsage["server_tool_use"] = map[string]int{"web_search_requests": 1}
	}
	evs = append(evs,
		map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": msg["stop_reason"], "stop_sequence": msg["stop_sequence"]}, "usage": endUsage},
		map[string]any{"type": "message_stop"})
	return evs
}

// PrettyBody renders a recorded body for test failure messages.
func (r Request) PrettyBody() string {
	var out bytes.Buffer
	_ = json.Indent(&out, r.RawBody, "", "  ")
	return out.String()
}
