package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/answers"
	"github.com/meridian-gw/meridian/internal/anthropic"
	"github.com/meridian-gw/meridian/internal/dispatch"
	"github.com/meridian-gw/meridian/internal/gateway"
	"github.com/meridian-gw/meridian/internal/store"
	"github.com/meridian-gw/meridian/internal/store/sqlite/sqlitetest"
)

// lastWrite calls at on the write that holds end: the answer's last bytes.
type lastWrite struct {
	*httptest.ResponseRecorder
	end []byte
	at  func()
}

func (w *lastWrite) Write(b []byte) (int, error) {
	if bytes.Contains(b, w.end) {
		w.at()
	}
	return w.ResponseRecorder.Write(b)
}

// An answer kept for retries is saved before its last bytes are written,
// whole (those bytes included): a retry that reaches any host once the
// client could have read the end finds it, streamed or not.
func TestAnAnswerIsSavedBeforeItsLastBytes(t *testing.T) {
	st := sqlitetest.Open(t)
	s, err := New(Config{Listen: Listen{Addr: "127.0.0.1:0"},
		Models: Models{Dispatch: dispatch.New(dispatch.Config{Answers: answers.New(st.Answers, answers.DefaultLimits(), nil)})}})
	if err != nil {
		t.Fatal(err)
	}
	raw := []byte(`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`)
	req, err := anthropic.DecodeMessagesRequest(raw)
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		end   string
		serve func(w http.ResponseWriter, r *http.Request)
	}{
		"json": {`"stop_reason":"end_turn"`, func(w http.ResponseWriter, r *http.Request) {
			writeAnswer(w, r, anthropic.Response{ID: "msg_1", Type: "message", Role: "assistant", StopReason: "end_turn",
				Content: []json.RawMessage{anthropic.TextBlock("hello")}}, nil)
		}},
		"stream": {"event: message_stop", func(w http.ResponseWriter, r *http.Request) {
			o := newSSEWriter(w, &messagesSSE{}, never)
			defer o.stopPings()
			_ = o.Start(gateway.Start{ID: "msg_1", Model: "m"})
			_ = o.BlockStart(0, json.RawMessage(`{"type":"text","text":""}`))
			_ = o.BlockDelta(0, json.RawMessage(`{"type":"text_delta","text":"hello"}`))
			_ = o.Flush()
			_ = o.BlockStop(0)
			_ = o.Finish(gateway.Finish{StopReason: "end_turn"})
		}},
	} {
		t.Run(name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/v1/messages", bytes.NewReader(raw))
			r.Header.Set(headerIdempotency, "once-"+name)
			scope, key := credentialScope(r), requestKey(r, "once-"+name, raw)
			var atEnd *store.SavedAnswer
			w := &lastWrite{ResponseRecorder: httptest.NewRecorder(), end: []byte(c.end), at: func() {
				if a, ok, err := st.Answers.Get(context.Background(), scope, key, time.Now()); err == nil && ok {
					atEnd = &a
				}
			}}
			s.once(w, r, raw, req, func(w http.ResponseWriter) { c.serve(w, r) })
			if atEnd == nil {
				t.Fatal("the answer was not saved when its last bytes were written")
			}
			if got, want := string(atEnd.Body), w.Body.String(); got != want || !strings.Contains(got, c.end) {
				t.Fatalf("saved %q, sent %q", got, want)
			}
		})
	}
}
