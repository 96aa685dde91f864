package httpapi

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/meridian-gw/meridian/internal/adapter"
	"github.com/meridian-gw/meridian/internal/anthropic"
	"github.com/meridian-gw/meridian/internal/gateway"
	"github.com/meridian-gw/meridian/internal/jsonbody"
	"github.com/meridian-gw/meridian/internal/openai"
)

// chatCompletions serves POST /v1/chat/completions: the request becomes
// the Messages API request the gateway runs, on the same conversations,
// live processes and client-tool loop, and the answer is rendered as a
// chat.completion or its chunks.
func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request) {
	creq, raw, ok := decodeBody(s, w, r, openai.DecodeChatRequest)
	if !ok {
		return
	}
	areq := creq.Anthropic()
	greq := gateway.Request{Body: areq, Header: r.Header, Caller: callerName(r.Context()), Hints: bodyHints(creq.Identity), Echo: creq.Echo}
	s.serveModel(w, r, modelCall{raw: raw, req: greq}, func(w http.ResponseWriter, greq gateway.Request, _ *keyHold) {
		searches := creq.WebSearch && s.backends.of(r.Context()).SearchesWeb()
		ignored := creq.Ignored
		if creq.WebSearch {
			ignored = searchIgnored(ignored, searches, "web_search_options", creq.WebSearchUnhonoured)
		}
		setIgnored(w.Header(), s.withOutputLimit(r, ignored, creq.MaxTokensField))
		id := "chatcmpl-" + rand.Text()
		created := time.Now().Unix()
		if creq.Stream {
			enc := openai.NewChunkEncoder(id, created, creq.IncludeUsage, creq.Format)
			enc.Custom(creq.Customs())
			if searches {
				enc.Cite()
			}
			_ = s.stream(w, r, greq, id, &chatSSE{enc: enc})
			return
		}
		out, ok := s.collect(w, r, greq, id)
		if !ok {
			return
		}
		c, err := openai.NewCompletion(openai.Answer{
			ID: id, Model: out.start.Model, Created: created,
			Content: out.finish.Content, StopReason: out.finish.StopReason, Usage: out.finish.Usage, Custom: creq.Customs(),
		}, creq.Format)
		if err != nil {
			s.fail(w, r, formatMismatch(err))
			return
		}
		writeAnswer(w, r, c, out.finish.Content)
	})
}

// bodyHints are an OpenAI body's identity signals: an explicit session in
// the metadata, and the cache key and user, which only keep callers apart.
func bodyHints(req openai.Identity) adapter.Hints {
	h := adapter.Hints{Session: req.Metadata["session_id"]}
	if h.Session == "" {
		h.Session = req.Metadata["conversation_id"]
	}
	if req.PromptCacheKey != "" || req.User != "" {
		h.Scope = req.PromptCacheKey + "\x00" + req.User
	}
	return h
}

// invalidField is a decoding error as a 400 that names the field.
func invalidField(err error) *gateway.Error {
	e := gateway.InvalidRequest(err.Error())
	var fe *jsonbody.Error
	if errors.As(err, &fe) {
		e.Param = fe.Field
	}
	return e
}

// formatMismatch is an answer that does not fit the response format the
// client asked for: the upstream's answer is unusable, as from a bad
// gateway, and a retry may well fit.
func formatMismatch(err error) error {
	var fe *openai.FormatError
	if !errors.As(err, &fe) {
		return err
	}
	return &gateway.Error{Status: http.StatusBadGateway, Type: anthropic.ErrAPI, Message: fe.Error()}
}

// openAIEncoder is what both OpenAI stream encoders (chat chunks and
// Responses events) take from the gateway.
type openAIEncoder interface {
	Start(dst []byte, model string) []byte
	BlockStart(dst []byte, index int, block json.RawMessage) []byte
	BlockDelta(dst []byte, index int, delta json.RawMessage) []byte
	BlockStop(dst []byte, index int) []byte
	Finish(dst []byte, stopReason string, u anthropic.Usage) ([]byte, error)
	Fail(dst []byte, status int, message string, retryAfter int) []byte
}

// openAISSE renders an OpenAI stream as the SSE writer's encoder. ended,
// when set, runs once the answer is complete and before its last event
// goes out: a stored response is recorded finished by then, so a client
// that continues it the moment it reads the end finds it so.
type openAISSE[E openAIEncoder] struct {
	enc     E
	started bool
	ended   func()
}

type (
	chatSSE      = openAISSE[*openai.ChunkEncoder]
	responsesSSE = openAISSE[*openai.ResponseEncoder]
)

func (e *openAISSE[E]) start(dst []byte, st gateway.Start) []byte {
	if e.started {
		return dst
	}
	e.started = true
	return e.enc.Start(dst, st.Model)
}

func (e *openAISSE[E]) blockStart(dst []byte, index int, block json.RawMessage) []byte {
	return e.enc.BlockStart(dst, index, block)
}

func (e *openAISSE[E]) blockDelta(dst []byte, index int, delta json.RawMessage) []byte {
	return e.enc.BlockDelta(dst, index, delta)
}

func (e *openAISSE[E]) blockStop(dst []byte, index int) []byte {
	return e.enc.BlockStop(dst, index)
}

func (e *openAISSE[E]) finish(dst []byte, f gateway.Finish) ([]byte, error) {
	out, err := e.enc.Finish(dst, f.StopReason, f.Usage)
	if err != nil {
		return dst, formatMismatch(err)
	}
	if e.ended != nil {
		e.ended()
	}
	return out, nil
}

func (e *openAISSE[E]) ping(dst []byte) []byte { return openai.AppendPing(dst) }

func (e *openAISSE[E]) fail(dst []byte, ge *gateway.Error) []byte {
	return e.enc.Fail(dst, ge.Status, ge.Message, ge.RetryAfterSeconds())
}
