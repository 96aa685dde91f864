package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/meridian-gw/meridian/internal/anthropic"
	"github.com/meridian-gw/meridian/internal/gateway"
	"github.com/meridian-gw/meridian/internal/openai"
	"github.com/meridian-gw/meridian/internal/responses"
	"github.com/meridian-gw/meridian/internal/retryafter"
)

// storeTimeout bounds the store writes that record a response's end; they
// run even when the client has gone.
const storeTimeout = 10 * time.Second

// responseCall is one POST /v1/responses in flight.
type responseCall struct {
	req   *openai.ResponsesRequest
	meta  openai.ResponseMeta
	greq  gateway.Request
	id    string
	scope string
	store bool // a record exists and follows the response
	// key is the request's count against its API key, which a
	// background response's run takes over.
	key *keyHold

	endMu sync.Mutex
	ended bool // the record holds the response's end
}

// createResponse serves POST /v1/responses: the request, after the history
// of its previous response, becomes the Messages API request the gateway
// runs; the answer is a response object, its event stream, or — in the
// background — a stored response that runs on its own.
func (s *Server) createResponse(w http.ResponseWriter, r *http.Request) {
	rreq, raw, ok := decodeBody(s, w, r, openai.DecodeResponsesRequest)
	if !ok {
		return
	}
	if rreq.Background && s.cfg.Responses.Store == nil {
		writeError(w, r, gateway.InvalidRequest("background responses need the response store, which this server runs without"))
		return
	}
	c := &responseCall{req: rreq, id: "resp_" + rand.Text(), scope: credentialScope(r)}
	hist, gerr := s.history(r.Context(), c.scope, rreq)
	if gerr != nil {
		writeError(w, r, gerr)
		return
	}
	areq, err := rreq.Anthropic(hist)
	if err != nil {
		writeError(w, r, invalidField(err))
		return
	}
	// A background response runs where its conversation's live process
	// is, as a foreground one does; it is followed from any host.
	greq := gateway.Request{Body: areq, Header: r.Header, Caller: callerName(r.Context()), Hints: bodyHints(rreq.Identity)}
	s.serveModel(w, r, modelCall{raw: raw, req: greq, background: rreq.Background}, func(w http.ResponseWriter, greq gateway.Request, key *keyHold) {
		c.key, c.greq = key, greq
		s.respond(w, r, c)
	})
}

// respond runs a response call: stored, in the background, streamed or
// answered whole.
func (s *Server) respond(w http.ResponseWriter, r *http.Request, c *responseCall) {
	rreq := c.req
	limit := ""
	if rreq.MaxTokens > 0 {
		limit = "max_output_tokens"
	}
	ignored := rreq.Ignored
	if ws := rreq.WebSearch; ws != nil {
		ignored = searchIgnored(ignored, s.backends.of(r.Context()).SearchesWeb(), "tools: "+ws.Tool, ws.Unhonoured)
	}
	setIgnored(w.Header(), s.withOutputLimit(r, ignored, limit))
	c.meta = rreq.Meta(c.id, time.Now().Unix(), s.cfg.Responses.Sealer)
	c.greq.Echo = rreq.Echo
	if rreq.Store && s.cfg.Responses.Store != nil {
		status := openai.StatusInProgress
		if rreq.Background {
			status = openai.StatusQueued
		}
		if gerr := s.putResponse(r.Context(), c, status); gerr != nil {
			writeError(w, r, gerr)
			return
		}
		c.store = true
	}
	switch {
	case rreq.Background:
		s.background(w, r, c)
	case rreq.Stream:
		enc := &responsesSSE{enc: openai.NewResponseEncoder(c.meta)}
		enc.ended = func() { s.storeEnd(r.Context(), c, *enc.enc.Final()) }
		err := s.stream(w, r, c.greq, c.id, enc)
		s.recordEnd(r.Context(), c, enc.enc, err)
	default:
		s.responseJSON(w, r, c)
	}
}

// responseJSON answers with the whole response object.
func (s *Server) responseJSON(w http.ResponseWriter, r *http.Request, c *responseCall) {
	out := &collected{}
	err := s.answer(w, r, c.greq, c.id, out)
	var resp openai.Response
	if err == nil {
		resp, err = c.meta.Complete(out.start.Model, out.finish.Content, out.finish.StopReason, out.finish.Usage)
		err = formatMismatch(err)
	}
	if err != nil {
		ge := asGatewayError(err)
		s.storeEnd(r.Context(), c, c.meta.Failed(nil, ge.Status, ge.Message, ge.RetryAfterSeconds()))
		s.fail(w, r, err)
		return
	}
	s.storeEnd(r.Context(), c, resp)
	sessionHeaders(w, out)
	writeAnswer(w, r, resp, out.finish.Content)
}

// recordEnd stores how a streamed response ended.
func (s *Server) recordEnd(ctx context.Context, c *responseCall, enc *openai.ResponseEncoder, err error) {
	if !c.store {
		return
	}
	if final := enc.Final(); final != nil {
		s.storeEnd(ctx, c, *final)
		return
	}
	if err == nil || errors.Is(err, context.Canceled) || ctx.Err() != nil {
		resp := c.meta.Failed(nil, http.StatusInternalServerError, "the client went away before the response finished", 0)
		resp.Error.Code = "client_disconnected"
		s.storeEnd(ctx, c, resp)
		return
	}
	ge := asGatewayError(err)
	s.storeEnd(ctx, c, c.meta.Failed(nil, ge.Status, ge.Message, ge.RetryAfterSeconds()))
}

// putResponse records a new response; a full ledger of running responses
// refuses it with a wait.
func (s *Server) putResponse(ctx context.Context, c *responseCall, status string) *gateway.Error {
	snap, _ := json.Marshal(c.meta.Snapshot(status, nil))
	err := s.cfg.Responses.Store.Put(ctx, responses.Record{
		ID: c.id, Scope: c.scope, Status: status, Background: c.req.Background, Previous: c.req.Previous,
		Input: openai.ItemsJSON(c.req.Input, "in_"+strings.TrimPrefix(c.id, "resp_")), Response: snap,
	})
	switch {
	case errors.Is(err, responses.ErrFull):
		return overloaded("the response store is full of responses still running; retry later")
	case err != nil:
		s.log.Error("store: could not store a response", "err", err)
		return gateway.StoreUnavailable("store the response")
	}
	return nil
}

// storeEnd records a response's final object, once.
func (s *Server) storeEnd(ctx context.Context, c *responseCall, resp openai.Response) {
	if !c.store {
		return
	}
	c.endMu.Lock()
	defer c.endMu.Unlock()
	if c.ended {
		return
	}
	c.ended = true
	body, _ := json.Marshal(resp)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	if err := s.cfg.Responses.Store.Update(sctx, c.id, resp.Status, body); err != nil && !errors.Is(err, responses.ErrNotFound) {
		s.log.Warn("could not record a response's end", "response", c.id, "err", err)
	}
}

// storeProgress records that a stored response's run has begun.
func (s *Server) storeProgress(c *responseCall, resp openai.Response) {
	if !c.store {
		return
	}
	body, _ := json.Marshal(resp)
	sctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := s.cfg.Responses.Store.Update(sctx, c.id, resp.Status, body); err != nil && !errors.Is(err, responses.ErrNotFound) {
		s.log.Warn("could not record a response in progress", "response", c.id, "err", err)
	}
}

// overloaded is a 529 with the overload wait.
func overloaded(msg string) *gateway.Error {
	e := &gateway.Error{Status: anthropic.StatusOverloaded, Type: anthropic.ErrOverloaded, Message: msg}
	e.RetryAfter, e.WaitSource = retryafter.Compute(retryafter.Facts{Status: e.Status, Message: msg, Now: time.Now()})
	return e
}

// credentialScope names who may see a stored response: the presenter of
// the request's API key.
func credentialScope(r *http.Request) string {
	if scope, ok := forwarded(r.Context()); ok {
		return scope
	}
	return responses.Scope(presentedKey(r))
}
