package forward

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/meridian-gw/meridian/internal/anthropic"
	"github.com/meridian-gw/meridian/internal/telemetry"
)

// The relay alone: a holder's answer as bytes that arrive in pieces, stop
// short or go quiet; no hosts.

// cutReader yields its pieces, then fails as a connection to a killed
// host does.
type cutReader struct{ pieces []string }

var errCut = io.ErrUnexpectedEOF

func (c *cutReader) Read(p []byte) (int, error) {
	if len(c.pieces) == 0 {
		return 0, errCut
	}
	n := copy(p, c.pieces[0])
	c.pieces[0] = c.pieces[0][n:]
	if c.pieces[0] == "" {
		c.pieces = c.pieces[1:]
	}
	return n, nil
}

func relayCut(t *testing.T, api string, pieces ...string) string {
	t.Helper()
	rec := httptest.NewRecorder()
	rl := newRelay(rec, relayProtocolFor(api), time.Hour)
	if err := rl.copy(&cutReader{pieces: pieces}); !errors.Is(err, errCut) {
		t.Fatalf("copy = %v, want the cut", err)
	}
	rl.cut(CutError("host-a", false))
	return rec.Body.String()
}

// A stream cut in the middle of a frame reaches the client as its whole
// frames and then the API's own error frame, with the wait; the half
// frame never goes out.
func TestRelayCutEndsWithTheAPIsError(t *testing.T) {
	t.Run("messages", func(t *testing.T) {
		got := relayCut(t, telemetry.APIMessages,
			string(anthropic.AppendMessageStart(nil, "msg_1", "m", anthropic.Usage{})),
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_bl")
		if strings.Contains(got, "content_block_delta") || !strings.HasSuffix(got, "\n\n") {
			t.Fatalf("the half frame went out: %q", got)
		}
		last := got[strings.LastIndex(got[:len(got)-2], "\n\n")+2:]
		if !strings.HasPrefix(last, "event: error\n") || !strings.Contains(last, `"type":"api_error"`) ||
			!strings.Contains(last, "stopped in the middle") || !strings.Contains(last, `"retry_after":`) {
			t.Fatalf("the stream ended with %q", last)
		}
	})
	t.Run("chat", func(t *testing.T) {
		got := relayCut(t, telemetry.APIChat, "data: {\"id\":\"chatcmpl-1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\ndata: {\"id\":\"cha")
		if !strings.HasSuffix(got, "data: [DONE]\n\n") || !strings.Contains(got, `"error":{`) || strings.Contains(got, `"id":"cha"`) {
			t.Fatalf("the chat stream ended with %q", got)
		}
	})
	t.Run("responses", func(t *testing.T) {
		created := `{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","status":"in_progress","model":"m","output":[]}}`
		got := relayCut(t, telemetry.APIResponses,
			"event: response.created\ndata: "+created+"\n\n",
			"event: response.in_progress\ndata: {\"type\":\"response.in_progress\",\"sequence_number\":1,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"in_progress\",\"model\":\"m\",\"output\":[]}}\n\n",
			"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":2,\"delta\":\"hi\"}\n\nevent: response.output_te")
		last := got[strings.LastIndex(got[:len(got)-2], "\n\n")+2:]
		data, ok := strings.CutPrefix(last, "event: response.failed\ndata: ")
		if !ok {
			t.Fatalf("the stream ended with %q", last)
		}
		var ev struct {
			Seq      int `json:"sequence_number"`
			Response struct {
				ID, Status string
				Error      struct{ Code, Message string }
			}
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Seq != 3 || ev.Response.ID != "resp_1" || ev.Response.Status != "failed" || ev.Response.Error.Code != "service_unavailable" {
			t.Fatalf("response.failed = %+v", ev)
		}
	})
	t.Run("responses before its first event", func(t *testing.T) {
		got := relayCut(t, telemetry.APIResponses, ": ping\n\n")
		if !strings.HasSuffix(got, "\n\n") || !strings.Contains(got, "event: error\ndata: {") || !strings.Contains(got, `"sequence_number":0`) {
			t.Fatalf("the stream ended with %q", got)
		}
	})
}

// An answer whose last frame arrived is whole, whatever happens to the
// connection after it.
func TestRelayAfterTheEndAddsNothing(t *testing.T) {
	end := string(anthropic.AppendMessageStop(nil))
	got := relayCut(t, telemetry.APIMessages, string(anthropic.AppendMessageStart(nil, "msg_1", "m", anthropic.Usage{})), end)
	if !strings.HasSuffix(got, end) {
		t.Fatalf("something followed message_stop: %q", got)
	}
}

// A body that is not a stream cannot carry an error after it began: the
// connection is aborted, so the client sees a transport error rather than
// a short body taken for whole. So is a stream cut inside a frame too long
// to hold back.
func TestRelayCutAbortsWhatCannotCarryAnError(t *testing.T) {
	for name, c := range map[string]struct {
		proto relayProtocol
		body  string
	}{
		"json":        {nil, `{"id":"msg_1","content":[{"type":"te`},
		"long frame":  {messagesRelay{}, "event: content_block_delta\ndata: " + strings.Repeat("x", maxPendingFrame+10)},
		"chat frame":  {chatRelay{}, "data: " + strings.Repeat("y", maxPendingFrame+10)},
		"after frame": {messagesRelay{}, "event: ping\ndata: {}\n\nevent: content_block_delta\ndata: " + strings.Repeat("x", maxPendingFrame+10)},
	} {
		t.Run(name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			rl := newRelay(rec, c.proto, time.Hour)
			if err := rl.copy(&cutReader{pieces: []string{c.body}}); !errors.Is(err, errCut) {
				t.Fatalf("copy = %v", err)
			}
			defer func() {
				if v := recover(); v != http.ErrAbortHandler {
					t.Fatalf("recovered %v, want the handler aborted", v)
				}
				if got := rec.Body.String(); strings.Contains(got, "error") {
					t.Fatalf("an error frame went out inside the cut one: %q", got[len(got)-100:])
				}
			}()
			rl.cut(CutError("host-a", false))
		})
	}
}

// A frame too long to hold back is written through; the frames after it
// are held back whole again, and the event it was still counts.
func TestRelayWritesALongFrameThrough(t *testing.T) {
	long := "event: message_stop\ndata: {\"type\":\"message_stop\",\"pad\":\"" + strings.Repeat("z", maxPendingFrame+10) + "\"}\n\n"
	rec := httptest.NewRecorder()
	rl := newRelay(rec, messagesRelay{}, time.Hour)
	if err := rl.copy(&cutReader{pieces: []string{long[:maxPendingFrame+5], long[maxPendingFrame+5:]}}); !errors.Is(err, errCut) {
		t.Fatal(err)
	}
	rl.cut(CutError("host-a", false))
	if got := rec.Body.String(); got != long {
		t.Fatalf("the long frame went out as %d bytes, want %d (and nothing after its end)", len(got), len(long))
	}
}

// A quiet holder is pinged for, between whole frames only; once it speaks
// again its frames follow.
func TestRelayPingsWhileTheHolderIsQuiet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pr, pw := io.Pipe()
		rec := httptest.NewRecorder()
		rl := newRelay(rec, messagesRelay{}, 10*time.Second)
		done := make(chan error, 1)
		go func() { done <- rl.copy(pr) }()
		_, _ = pw.Write([]byte("event: message_start\ndata: {}\n\nevent: content_block_delta\ndata: {\"half"))
		time.Sleep(25 * time.Second)
		synctest.Wait()
		got := rec.Body.String()
		if n := strings.Count(got, "event: ping\n"); n < 2 || !strings.HasPrefix(got, "event: message_start\ndata: {}\n\nevent: ping\n") {
			t.Fatalf("after 25 quiet seconds the client has %q", got)
		}
		if strings.Contains(got, "half") {
			t.Fatal("a ping went out inside the held frame")
		}
		if d := rl.silent(time.Now()); d != 25*time.Second {
			t.Fatalf("the holder counts as silent for %v", d)
		}
		_, _ = pw.Write([]byte("\"}\n\n"))
		_ = pw.Close()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if got := rec.Body.String(); !strings.HasSuffix(got, "\"half\"}\n\n") {
			t.Fatalf("the held frame did not follow: %q", got)
		}
	})
}

// relayCutError says what happened, and for a request with an explicit id
// that it is not run again under it.
func TestRelayCutErrorSaysWhatHappened(t *testing.T) {
	plain, named := CutError("h1", false), CutError("h1", true)
	if plain.Status != http.StatusServiceUnavailable || plain.RetryAfter <= 0 || !strings.Contains(plain.Message, "send it again") {
		t.Fatalf("plain = %+v", plain)
	}
	if !strings.Contains(named.Message, "outcome is unknown") || !strings.Contains(named.Message, "new request id") {
		t.Fatalf("named = %+v", named)
	}
}
