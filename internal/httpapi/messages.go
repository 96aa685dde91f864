package httpapi

import (
	"encoding/json"
	"net/http"

	"github.com/meridian-gw/meridian/internal/anthropic"
	"github.com/meridian-gw/meridian/internal/capture"
	"github.com/meridian-gw/meridian/internal/gateway"
	"github.com/meridian-gw/meridian/internal/telemetry"
)

// Response headers Meridian adds.
const (
	headerSession = "X-Meridian-Session-Id"
	// headerUnsaved says why the conversation's state after an answer
	// could not be saved: its next turn resumes from the last saved
	// state, or replays. A stream carries it as a trailer.
	headerUnsaved = "X-Meridian-Unsaved"
	// headerNativeWork says what the CLI's own tools did in the turn
	// (agy's browser or subagents, when granted, or denied); a stream
	// carries it as a trailer.
	headerNativeWork    = "X-Meridian-Native-Work"
	headerIgnored       = "X-Meridian-Ignored-Params"
	headerTokenEstimate = "X-Meridian-Token-Estimate"
)

// decodeBody reads a request body and decodes it with one protocol's
// validating decoder, answering the client itself when it cannot.
// It also returns the body as read.
func decodeBody[T any](s *Server, w http.ResponseWriter, r *http.Request, decode func([]byte) (T, error)) (T, []byte, bool) {
	var zero T
	body, herr := s.bodies.read(w, r)
	if herr != nil {
		writeError(w, r, herr)
		return zero, nil, false
	}
	capture.From(r.Context()).Request(body)
	req, err := decode(body)
	if err != nil {
		writeError(w, r, invalidField(err))
		return zero, nil, false
	}
	return req, body, true
}

// decodeMessages reads and validates a Messages API body.
func (s *Server) decodeMessages(w http.ResponseWriter, r *http.Request) (*anthropic.MessagesRequest, []byte, bool) {
	return decodeBody(s, w, r, anthropic.DecodeMessagesRequest)
}

// messages serves POST /v1/messages.
func (s *Server) messages(w http.ResponseWriter, r *http.Request) {
	req, raw, ok := s.decodeMessages(w, r)
	if !ok {
		return
	}
	greq := gateway.Request{Body: req, Header: r.Header, Caller: callerName(r.Context())}
	s.serveModel(w, r, modelCall{raw: raw, req: greq}, func(w http.ResponseWriter, greq gateway.Request, _ *keyHold) {
		setIgnored(w.Header(), s.withOutputLimit(r, s.backends.of(r.Context()).Ignored(req), "max_tokens"))
		id := gateway.NewMessageID()
		if req.Stream {
			_ = s.stream(w, r, greq, id, &messagesSSE{})
			return
		}
		if out, ok := s.collect(w, r, greq, id); ok {
			writeAnswer(w, r, messageResponse(out), out.finish.Content)
		}
	})
}

// collect runs a request that is answered as one JSON body. When it fails
// the error is answered and ok is false.
func (s *Server) collect(w http.ResponseWriter, r *http.Request, req gateway.Request, id string) (out *collected, ok bool) {
	out = &collected{}
	if err := s.answer(w, r, req, id, out); err != nil {
		s.fail(w, r, err)
		return nil, false
	}
	sessionHeaders(w, out)
	return out, true
}

// writeAnswer writes a collected answer's body: the answer is complete,
// for retries (saved before it is written) and for the request's record.
func writeAnswer(w http.ResponseWriter, r *http.Request, body any, content []json.RawMessage) {
	status, b := encodeJSON(http.StatusOK, body)
	w.Header().Set("Content-Type", "application/json")
	if status == http.StatusOK {
		answered(w, content, b)
	}
	w.WriteHeader(status)
	if _, err := w.Write(b); err == nil && status == http.StatusOK {
		telemetry.From(r.Context()).Delivered()
	}
}

// sessionHeaders name a collected answer's backend session and say when
// its state could not be saved.
func sessionHeaders(w http.ResponseWriter, out *collected) {
	if out.session != "" {
		w.Header().Set(headerSession, out.session)
	}
	if out.finish.Unsaved != "" {
		w.Header().Set(headerUnsaved, out.finish.Unsaved)
	}
	if out.finish.NativeWork != "" {
		w.Header().Set(headerNativeWork, out.finish.NativeWork)
	}
}

// stream serves a streaming request in enc's protocol. Headers go out with
// the first model output (or the first ping), so a failure before that is
// answered with a real HTTP status and Retry-After; after it, with an
// error frame in the stream.
//
// It returns the gateway's error, already answered.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, req gateway.Request, id string, enc sseEncoder) error {
	out := newSSEWriter(w, enc, s.cfg.Listen.PingInterval)
	defer out.stopPings()
	err := settled(r, s.answer(w, r, req, id, out))
	// No ping may commit the stream while an error is being answered.
	out.stopPings()
	noteFailure(r, err)
	if err == nil {
		telemetry.From(r.Context()).Delivered()
	}
	if err == nil || out.fail(err) {
		return err
	}
	s.fail(w, r, err)
	return err
}

func messageResponse(o *collected) anthropic.Response {
	resp := anthropic.Response{
		ID:         o.start.ID,
		Type:       "message",
		Role:       anthropic.RoleAssistant,
		Model:      o.start.Model,
		Content:    o.finish.Content,
		StopReason: o.finish.StopReason,
		Usage:      o.finish.Usage,
	}
	if resp.Content == nil {
		resp.Content = []json.RawMessage{}
	}
	if o.finish.StopSequence != "" {
		seq := o.finish.StopSequence
		resp.StopSequence = &seq
	}
	return resp
}

// messagesSSE renders the Messages API's event stream. A ping may come
// before message_start (the SDKs skip pings), so message_start always
// carries the real start: the model that answers and its input usage.
type messagesSSE struct {
	started bool
}

func (e *messagesSSE) start(dst []byte, st gateway.Start) []byte {
	if e.started {
		return dst
	}
	e.started = true
	return anthropic.AppendMessageStart(dst, st.ID, st.Model, st.Usage)
}

func (e *messagesSSE) blockStart(dst []byte, index int, block json.RawMessage) []byte {
	return anthropic.AppendBlockStart(dst, index, block)
}

func (e *messagesSSE) blockDelta(dst []byte, index int, delta json.RawMessage) []byte {
	return anthropic.AppendBlockDelta(dst, index, delta)
}

func (e *messagesSSE) blockStop(dst []byte, index int) []byte {
	return anthropic.AppendBlockStop(dst, index)
}

func (e *messagesSSE) finish(dst []byte, f gateway.Finish) ([]byte, error) {
	dst = anthropic.AppendMessageDelta(dst, f.StopReason, f.StopSequence, f.Usage)
	return anthropic.AppendMessageStop(dst), nil
}

func (e *messagesSSE) ping(dst []byte) []byte { return anthropic.AppendPing(dst) }

func (e *messagesSSE) fail(dst []byte, ge *gateway.Error) []byte {
	return anthropic.AppendErrorEvent(dst, ge.Type, ge.Message, ge.RetryAfterSeconds())
}
