package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/meridian-gw/meridian/internal/anthropic"
	"github.com/meridian-gw/meridian/internal/gateway"
	"github.com/meridian-gw/meridian/internal/hooks"
)

// hookedKey marks a request whose hooks ran: a mounted server it is
// handed to does not run them again.
type hookedKey struct{}

// hookAPI names a model route's API for the hooks ("" for other routes).
func hookAPI(r *http.Request) string {
	if r.Method != http.MethodPost {
		return ""
	}
	switch strings.TrimPrefix(r.URL.Path, "/v1") {
	case "/messages":
		return "messages"
	case "/messages/count_tokens":
		return "count_tokens"
	case "/chat/completions":
		return "chat"
	case "/responses":
		return "responses"
	}
	return ""
}

// withHooks runs the operator's request hooks on a model request before
// anything else reads it (so a hook's header or model reaches the
// profile choice and the routing), and its answer hooks on what it
// answers. A request another host forwarded had its hooks run there.
func (s *Server) withHooks(next http.Handler) http.Handler {
	h := s.cfg.Hooks
	if h == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		api := hookAPI(r)
		_, peer := forwarded(r.Context())
		if api == "" || peer || r.Context().Value(hookedKey{}) != nil {
			next.ServeHTTP(w, r)
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), hookedKey{}, true))
		if h.Has(hooks.StageRequest, api) {
			var ok bool
			if r, ok = s.hookRequest(w, r, api); !ok {
				return
			}
		}
		if !h.Has(hooks.StageAnswer, api) {
			next.ServeHTTP(w, r)
			return
		}
		hw := &heldAnswer{ResponseWriter: w, max: h.MaxBytes(api)}
		next.ServeHTTP(hw, r)
		msg := hooks.Message{API: api, Method: r.Method, Path: r.URL.Path, Key: callerName(r.Context()), Status: hw.status}
		switch {
		case hw.status == 0: // nothing was answered
		case hw.stream:
			msg.Header, msg.Body, msg.Stream, msg.Truncated = w.Header().Clone(), hw.buf.Bytes(), true, hw.over
			h.Observe(r.Context(), msg)
		default:
			s.hookAnswer(w, r, hw, msg)
		}
	})
}

// hookRequest reads the body, runs the request hooks and hands on the
// request as they left it. It answers the client itself when they fail or
// refuse. A body that is not JSON goes on untouched: the route refuses it
// before any work.
func (s *Server) hookRequest(w http.ResponseWriter, r *http.Request, api string) (*http.Request, bool) {
	body, e := s.bodies.read(w, r)
	if e != nil {
		writeError(w, r, e)
		return r, false
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	if !json.Valid(body) {
		return r, true
	}
	m, err := s.cfg.Hooks.Run(r.Context(), hooks.StageRequest, hooks.Message{API: api, Method: r.Method, Path: r.URL.Path,
		Key: callerName(r.Context()), Header: r.Header, Body: body})
	if err != nil {
		writeError(w, r, hookError(err))
		return r, false
	}
	r = r.Clone(r.Context())
	r.Header, r.Body, r.ContentLength = m.Header, io.NopCloser(bytes.NewReader(m.Body)), int64(len(m.Body))
	return r, true
}

// hookAnswer runs the answer hooks on a held answer and sends what they
// leave, or their error instead.
func (s *Server) hookAnswer(w http.ResponseWriter, r *http.Request, hw *heldAnswer, msg hooks.Message) {
	if hw.over {
		writeError(w, r, &gateway.Error{Status: http.StatusBadGateway, Type: anthropic.ErrAPI,
			Message: fmt.Sprintf("the answer is larger than the answer hooks take (max_bytes %d), so meridian did not send it", hw.max)})
		return
	}
	msg.Header, msg.Body = w.Header().Clone(), hw.buf.Bytes()
	// A client that left does not stop an observer from seeing what was
	// answered.
	m, err := s.cfg.Hooks.Run(context.WithoutCancel(r.Context()), hooks.StageAnswer, msg)
	if err != nil {
		writeError(w, r, hookError(err))
		return
	}
	out := w.Header()
	for name := range out {
		if _, kept := m.Header[name]; !kept {
			delete(out, name)
		}
	}
	for name, values := range m.Header {
		out[name] = values
	}
	out.Del("Content-Length")
	w.WriteHeader(hw.status)
	_, _ = w.Write(m.Body)
}

// hookError is a hook's failure or refusal in the client's protocol.
func hookError(err error) *gateway.Error {
	var he *hooks.Error
	if errors.As(err, &he) {
		return &gateway.Error{Status: he.Status, Type: anthropic.ErrorTypeForStatus(he.Status), Message: he.Message}
	}
	return asGatewayError(err)
}

// heldAnswer holds a whole answer for the answer hooks, up to max bytes,
// or, when the answer is a stream, passes it on as it comes and keeps a
// copy (up to max bytes) for the observers.
type heldAnswer struct {
	http.ResponseWriter
	max     int
	status  int
	stream  bool
	buf     bytes.Buffer
	over    bool
	decided bool
}

func (w *heldAnswer) decide(code int) {
	if w.decided {
		return
	}
	w.decided, w.status = true, code
	w.stream = strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream")
	if w.stream {
		w.ResponseWriter.WriteHeader(code)
	}
}

func (w *heldAnswer) WriteHeader(code int) { w.decide(code) }

func (w *heldAnswer) Write(b []byte) (int, error) {
	w.decide(http.StatusOK)
	if room := w.max - w.buf.Len(); len(b) > room {
		w.over = true
		w.buf.Write(b[:max(room, 0)])
	} else {
		w.buf.Write(b)
	}
	if w.stream {
		return w.ResponseWriter.Write(b)
	}
	return len(b), nil
}

// FlushError passes a stream's flushes on; a held answer is sent whole.
func (w *heldAnswer) FlushError() error {
	w.decide(http.StatusOK)
	if !w.stream {
		return nil
	}
	return http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach deadlines.
func (w *heldAnswer) Unwrap() http.ResponseWriter { return w.ResponseWriter }
