package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/meridian-gw/meridian/internal/anthropic"
	"github.com/meridian-gw/meridian/internal/gateway"
)

// Response headers Meridian adds.
const (
	headerSession       = "X-Meridian-Session-Id"
	headerIgnored       = "X-Meridian-Ignored-Params"
	headerTokenEstimate = "X-Meridian-Token-Estimate"
)

// decodeMessages reads and validates a Messages API body, answering the
// client itself when it cannot.
func (s *Server) decodeMessages(w http.ResponseWriter, r *http.Request) (*anthropic.MessagesRequest, bool) {
	body, herr := s.readBody(w, r)
	if herr != nil {
		writeError(w, herr)
		return nil, false
	}
	req, err := anthropic.DecodeMessagesRequest(body)
	if err != nil {
		writeError(w, gateway.InvalidRequest(err.Error()))
		return nil, false
	}
	return req, true
}

// messages serves POST /v1/messages.
func (s *Server) messages(w http.ResponseWriter, r *http.Request) {
	req, ok := s.decodeMessages(w, r)
	if !ok {
		return
	}
	if ignored := gateway.Ignored(req); len(ignored) > 0 {
		w.Header().Set(headerIgnored, strings.Join(ignored, ", "))
	}
	id := gateway.NewMessageID()
	if req.Stream {
		s.stream(w, r, req, id)
		return
	}
	out := newMessageOutput()
	if err := s.gw.Messages(r.Context(), gateway.Request{Body: req, Header: r.Header}, id, out); err != nil {
		s.fail(w, r, err)
		return
	}
	if out.session != "" {
		w.Header().Set(headerSession, out.session)
	}
	writeJSON(w, http.StatusOK, out.response())
}

// stream serves a streaming request. Headers go out with the first model
// output (or the first ping), so a failure before that is answered with a
// real HTTP status and Retry-After; after it, with an SSE error event.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, req *anthropic.MessagesRequest, id string) {
	out := newStreamOutput(w, gateway.Start{ID: id, Model: req.Model}, s.cfg.PingInterval)
	defer out.stopPings()
	err := s.gw.Messages(r.Context(), gateway.Request{Body: req, Header: r.Header}, id, out)
	// No ping may commit the stream while an error is being answered.
	out.stopPings()
	if err == nil || out.fail(err) {
		return
	}
	s.fail(w, r, err)
}

// fail renders an error as the whole response.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil {
		return // the client is gone; nobody reads an answer
	}
	var ge *gateway.Error
	if !errors.As(err, &ge) {
		if errors.Is(err, context.Canceled) {
			return
		}
		s.log.Error("request failed", "err", err)
		ge = &gateway.Error{Status: http.StatusInternalServerError, Type: anthropic.ErrAPI, Message: err.Error()}
	}
	writeError(w, ge)
}
