package httpapi

import (
	"github.com/meridian-gw/meridian/internal/testkit"

	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/anthropic"
	"github.com/meridian-gw/meridian/internal/gateway"
	"github.com/meridian-gw/meridian/internal/openai"
)

// The writer alone, with each protocol's encoder: no gateway, no CLI.

const never = time.Hour // a ping interval no test reaches

func chatWriter(w http.ResponseWriter, ping time.Duration) *sseWriter {
	return newSSEWriter(w, &chatSSE{enc: openai.NewChunkEncoder("chatcmpl-1", 1, false, nil)}, ping)
}

// Frames are buffered until the backend pauses (Flush), then written in
// one go; headers go out with the start, carrying the session id.
func TestSSEWriterBuffersUntilFlush(t *testing.T) {
	rec := httptest.NewRecorder()
	o := chatWriter(rec, never)
	defer o.stopPings()
	if rec.Body.Len() != 0 || rec.Code != 200 || len(rec.Header()) != 0 {
		t.Fatal("the writer wrote before the response began")
	}
	_ = o.Start(gateway.Start{Model: "m", SessionID: "sess-1"})
	_ = o.BlockStart(0, json.RawMessage(`{"type":"text","text":""}`))
	_ = o.BlockDelta(0, json.RawMessage(`{"type":"text_delta","text":"hi"}`))
	if rec.Body.Len() != 0 {
		t.Fatalf("frames left before the backend paused: %q", rec.Body.String())
	}
	if err := o.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(rec.Body.String(), "data: "); got != 2 || !rec.Flushed {
		t.Fatalf("after Flush: %d frames, flushed %v", got, rec.Flushed)
	}
	if rec.Header().Get("Content-Type") != "text/event-stream" || rec.Header().Get(headerSession) != "sess-1" {
		t.Fatalf("headers = %v", rec.Header())
	}
	if err := o.Finish(gateway.Finish{StopReason: "end_turn"}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(rec.Body.String(), "data: [DONE]\n\n") {
		t.Fatalf("the stream did not end: %q", rec.Body.String())
	}
	if o.fail(errors.New("late")) != true || strings.Contains(rec.Body.String(), "late") {
		t.Fatal("an error after the end was written")
	}
}

// A model slow to start gets pings: the first commits the headers, with
// the session's id named before the response began. The response's own
// start follows with what only it knows (the Messages API's message_start
// with its input usage).
func TestSSEWriterPingsAQuietStream(t *testing.T) {
	for name, enc := range map[string]sseEncoder{
		"chat":     &chatSSE{enc: openai.NewChunkEncoder("chatcmpl-1", 1, false, nil)},
		"messages": &messagesSSE{},
	} {
		t.Run(name, func(t *testing.T) {
			rec := newSyncRecorder()
			o := newSSEWriter(rec, enc, 5*time.Millisecond)
			o.NameSession("sess-early")
			rec.waitFor(t, "ping")
			o.stopPings()
			body := rec.body()
			if want := map[string]string{"chat": ": ping\n\n", "messages": "event: ping\n"}[name]; !strings.HasPrefix(body, want) {
				t.Fatalf("%s stream opened with %q", name, body)
			}
			if got := rec.Header().Get(headerSession); got != "sess-early" {
				t.Fatalf("session header = %q", got)
			}
			_ = o.Start(gateway.Start{ID: "msg_1", Model: "m", Usage: anthropic.Usage{InputTokens: 42}})
			_ = o.Flush()
			if name == "messages" && (strings.Count(rec.body(), "event: message_start") != 1 || !strings.Contains(rec.body(), `"input_tokens":42`)) {
				t.Fatalf("message_start: %q", rec.body())
			}
		})
	}
}

// A failed write means the client is gone: every later call reports it,
// and no error frame is attempted.
func TestSSEWriterRemembersAFailedWrite(t *testing.T) {
	w := &brokenWriter{ResponseRecorder: httptest.NewRecorder()}
	o := chatWriter(w, never)
	defer o.stopPings()
	_ = o.Start(gateway.Start{Model: "m"})
	if err := o.Flush(); err == nil {
		t.Fatal("a failed write went unnoticed")
	}
	if err := o.BlockDelta(0, json.RawMessage(`{"type":"text_delta","text":"x"}`)); err == nil {
		t.Fatal("a later call did not report the gone client")
	}
	writes := w.writes
	if !o.fail(errors.New("boom")) || w.writes != writes {
		t.Fatal("the writer tried to write an error frame to a gone client")
	}
}

// An error before the stream began is left to the caller (a real status);
// after it began, it ends the stream with an error frame carrying the
// wait; a cancelled request ends silently.
func TestSSEWriterFailures(t *testing.T) {
	rec := httptest.NewRecorder()
	o := chatWriter(rec, never)
	o.stopPings()
	if o.fail(&gateway.Error{Status: 429}) || rec.Body.Len() != 0 {
		t.Fatal("an uncommitted stream answered an error itself")
	}
	_ = o.Start(gateway.Start{Model: "m"})
	if !o.fail(&gateway.Error{Status: 429, Message: "slow", RetryAfter: 30 * time.Second}) {
		t.Fatal("a committed stream did not take the error")
	}
	if body := rec.Body.String(); !strings.Contains(body, `"retry_after":30`) || !strings.HasSuffix(body, "data: [DONE]\n\n") {
		t.Fatalf("error frame = %q", body)
	}

	rec = httptest.NewRecorder()
	o = chatWriter(rec, never)
	o.stopPings()
	_ = o.Start(gateway.Start{Model: "m"})
	_ = o.Flush()
	n := rec.Body.Len()
	if !o.fail(context.Canceled) || rec.Body.Len() != n {
		t.Fatal("a cancelled request got an error frame")
	}
}

// An answer the protocol refuses (a response_format mismatch) leaves the
// stream open for the error frame.
func TestSSEWriterFinishRefused(t *testing.T) {
	rec := httptest.NewRecorder()
	format := &openai.ResponseFormat{Type: "json_object"}
	o := newSSEWriter(rec, &chatSSE{enc: openai.NewChunkEncoder("chatcmpl-1", 1, false, format)}, never)
	o.stopPings()
	_ = o.Start(gateway.Start{Model: "m"})
	_ = o.BlockStart(0, json.RawMessage(`{"type":"text","text":""}`))
	_ = o.BlockDelta(0, json.RawMessage(`{"type":"text_delta","text":"not json"}`))
	err := o.Finish(gateway.Finish{StopReason: "end_turn"})
	var ge *gateway.Error
	if !errors.As(err, &ge) || ge.Status != http.StatusBadGateway {
		t.Fatalf("Finish = %v", err)
	}
	if !o.fail(err) || !strings.Contains(rec.Body.String(), `"code":"upstream_error"`) || strings.Contains(rec.Body.String(), "not json") {
		t.Fatalf("body = %q", rec.Body.String())
	}
}

type brokenWriter struct {
	*httptest.ResponseRecorder
	writes int
}

func (w *brokenWriter) Write([]byte) (int, error) {
	w.writes++
	return 0, errors.New("connection reset by peer")
}

// syncRecorder is a recorder the pinger may write to while the test reads.
type syncRecorder struct {
	*httptest.ResponseRecorder
	wrote chan struct{}
}

func newSyncRecorder() *syncRecorder {
	return &syncRecorder{ResponseRecorder: httptest.NewRecorder(), wrote: make(chan struct{}, 64)}
}

func (r *syncRecorder) Write(b []byte) (int, error) {
	n, err := r.ResponseRecorder.Write(b)
	select {
	case r.wrote <- struct{}{}:
	default:
	}
	return n, err
}

func (r *syncRecorder) body() string { return r.Body.String() }

func (r *syncRecorder) waitFor(t *testing.T, what string) {
	t.Helper()
	select {
	case <-r.wrote:
	case <-time.After(testkit.Scale(5 * time.Second)):
		t.Fatalf("no %s was written", what)
	}
}
