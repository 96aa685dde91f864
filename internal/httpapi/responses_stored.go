package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/meridian-gw/meridian/internal/anthropic"
	"github.com/meridian-gw/meridian/internal/dispatch"
	"github.com/meridian-gw/meridian/internal/gateway"
	"github.com/meridian-gw/meridian/internal/openai"
	"github.com/meridian-gw/meridian/internal/responses"
	"github.com/meridian-gw/meridian/internal/telemetry"
)

// history rebuilds what a request continues: the input and output items of
// its previous response and that one's predecessors, oldest first, and the
// items an item_reference may name.
func (s *Server) history(ctx context.Context, scope string, req *openai.ResponsesRequest) (openai.History, *gateway.Error) {
	h := openai.History{Sealer: s.cfg.Sealer}
	if req.Previous == "" {
		return h, nil
	}
	notFound := func(msg string) *gateway.Error {
		e := gateway.InvalidRequest(msg)
		e.Param = "previous_response_id"
		return e
	}
	if s.cfg.Responses == nil {
		return h, notFound("previous_response_id: this server stores no responses; send the whole conversation")
	}
	var chain [][]openai.Item
	seen := map[string]bool{}
	for id := req.Previous; id != ""; {
		if seen[id] {
			break
		}
		seen[id] = true
		rec, err := s.cfg.Responses.Get(ctx, scope, id)
		switch {
		case errors.Is(err, responses.ErrNotFound) && id == req.Previous:
			return h, notFound(fmt.Sprintf("previous response %q not found", id))
		case errors.Is(err, responses.ErrNotFound):
			return h, notFound(fmt.Sprintf("previous_response_id: the history of %q is no longer stored (its predecessor %q is gone); send the whole conversation", req.Previous, id))
		case err != nil:
			s.log.Error("store: could not read a stored response", "err", err)
			return h, gateway.StoreUnavailable("read the previous response")
		}
		if rec.Status != openai.StatusCompleted && rec.Status != openai.StatusIncomplete {
			return h, notFound(fmt.Sprintf("previous response %q is %s; only a finished response can be continued", id, rec.Status))
		}
		items, err := recordItems(rec)
		if err != nil {
			s.log.Error("a stored response does not decode", "response", id, "err", err)
			return h, notFound(fmt.Sprintf("previous response %q cannot be read back; send the whole conversation", id))
		}
		chain = append(chain, items)
		id = rec.Previous
	}
	slices.Reverse(chain)
	h.Items = slices.Concat(chain...)
	h.Resolve = func(ref string) (openai.Item, bool) {
		for _, it := range h.Items {
			if it.ID == ref {
				return it, true
			}
		}
		return openai.Item{}, false
	}
	return h, nil
}

// recordItems are a stored response's input items, then its output items.
func recordItems(rec responses.Record) ([]openai.Item, error) {
	in, err := openai.DecodeItems(rec.Input)
	if err != nil {
		return nil, err
	}
	var resp struct {
		Output json.RawMessage `json:"output"`
	}
	if err := json.Unmarshal(rec.Response, &resp); err != nil {
		return nil, err
	}
	if len(resp.Output) == 0 || string(resp.Output) == "[]" {
		return in, nil
	}
	out, err := openai.DecodeItems(resp.Output)
	return append(in, out...), err
}

// background starts a response that runs detached from this request and
// answers at once: its events when the client streams, else the queued
// response object.
func (s *Server) background(w http.ResponseWriter, r *http.Request, c *responseCall) {
	greq := c.greq
	greq.Header = r.Header.Clone() // the job outlives the request
	out := newLogOutput(c.meta, func(final openai.Response) { s.storeEnd(context.Background(), c, final) })
	call := dispatch.Call{Request: greq, ID: c.id, Named: named(r.Context()), Allowed: allowedProfile(r.Context())}
	// The request's record is the run's: it is finished when the run
	// ends, with the run's tokens and outcome.
	tr := telemetry.From(r.Context())
	keyDone := c.key.take() // the run ends the key's count
	log, err := s.cfg.Jobs.Start(c.id, out.current, func(ctx context.Context, log *responses.EventLog) {
		defer keyDone()
		out.attach(log)
		s.storeProgress(c, out.begin())
		err := s.dispatch.Answer(telemetry.With(ctx, tr), call, out)
		cancelled := errors.Is(context.Cause(ctx), responses.ErrCancelled)
		if err != nil && ctx.Err() != nil && !cancelled {
			e := gateway.Unavailable("meridian shut down before this response finished; send the request again")
			e.RetryAfter = drainRetry
			err = e
		}
		out.end(err, cancelled) // recorded by out before its last event
		switch {
		case cancelled:
			s.finishTrace(tr, statusClientGone, "cancelled")
		case err != nil:
			ge := asGatewayError(err)
			s.finishTrace(tr, ge.Status, ge.Type)
		default:
			s.finishTrace(tr, http.StatusOK, "")
		}
	})
	if err != nil {
		c.key.giveBack()
		ge := overloaded("too many background responses are running; retry when one has finished")
		switch {
		case errors.Is(err, context.Canceled):
			ge = overloaded("meridian is shutting down")
		case !errors.Is(err, responses.ErrBusy):
			s.log.Error("store: could not begin a background response's event log", "err", err)
			ge = gateway.StoreUnavailable("begin the background response")
		}
		s.storeEnd(r.Context(), c, c.meta.Failed(nil, ge.Status, ge.Message, ge.RetryAfterSeconds()))
		s.fail(w, r, ge)
		return
	}
	tr.HandOff()
	if c.req.Stream {
		s.followLog(w, r, log, -1)
		return
	}
	writeJSON(w, http.StatusOK, c.meta.Snapshot(openai.StatusQueued, nil))
}

// storedResponse finds a response of the asking credential, answering
// 404 itself when there is none.
func (s *Server) storedResponse(w http.ResponseWriter, r *http.Request) (responses.Record, bool) {
	id := r.PathValue("id")
	if s.cfg.Responses == nil {
		writeError(w, r, &gateway.Error{Status: http.StatusNotFound, Type: anthropic.ErrNotFound, Message: "response " + strconv.Quote(id) + " not found"})
		return responses.Record{}, false
	}
	rec, err := s.cfg.Responses.Get(r.Context(), credentialScope(r), id)
	switch {
	case errors.Is(err, responses.ErrNotFound):
		writeError(w, r, &gateway.Error{Status: http.StatusNotFound, Type: anthropic.ErrNotFound, Message: "response " + strconv.Quote(id) + " not found"})
		return rec, false
	case err != nil:
		s.log.Error("store: could not read a stored response", "err", err)
		s.fail(w, r, gateway.StoreUnavailable("read the response"))
		return rec, false
	}
	return rec, true
}

// getResponse serves GET /v1/responses/{id}: the stored object, its live
// status while it runs here, or — with ?stream=true — its event stream
// from ?starting_after= on.
func (s *Server) getResponse(w http.ResponseWriter, r *http.Request) {
	rec, ok := s.storedResponse(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	if s.streamAsked(w, r) {
		after := -1
		if v := q.Get("starting_after"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < -1 {
				writeError(w, r, &gateway.Error{Status: http.StatusBadRequest, Type: anthropic.ErrInvalidRequest, Param: "starting_after", Message: "starting_after: expected a sequence number"})
				return
			}
			after = n
		}
		if !rec.Background {
			writeError(w, r, gateway.InvalidRequest("only a background response can be streamed again"))
			return
		}
		kept, err := s.cfg.Jobs.Keeps(r.Context(), rec.ID, after)
		switch {
		case errors.Is(err, responses.ErrNoLog):
			writeError(w, r, gateway.InvalidRequest("response "+strconv.Quote(rec.ID)+" has no events kept: GET it without stream for the result"))
		case err != nil:
			s.log.Error("store: could not read a background response's events", "err", err)
			s.fail(w, r, gateway.StoreUnavailable("read the response's events"))
		case !kept:
			writeError(w, r, gateway.InvalidRequest("the events after "+strconv.Itoa(after)+" are no longer kept (the event log is bounded); GET the response without stream for the result"))
		default:
			s.follow(w, r, rec.ID, after)
		}
		return
	}
	body := rec.Response
	if current, ok := s.cfg.Jobs.Current(rec.ID); ok && !openai.Finished(rec.Status) {
		body = current // the store learns the end only after the job's last event
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// streamAsked reports a GET that asks for the event stream: ?stream=true,
// or — as the official SDKs send it — {"stream": true} as the body.
func (s *Server) streamAsked(w http.ResponseWriter, r *http.Request) bool {
	if stream, _ := strconv.ParseBool(r.URL.Query().Get("stream")); stream {
		return true
	}
	if r.ContentLength == 0 {
		return false
	}
	var body struct {
		Stream bool `json:"stream"`
	}
	raw, _ := s.readBodyLimit(w, r, 1024)
	_ = json.Unmarshal(raw, &body)
	return body.Stream
}

// inputItems serves GET /v1/responses/{id}/input_items: the items the
// response answered, as a list.
func (s *Server) inputItems(w http.ResponseWriter, r *http.Request) {
	rec, ok := s.storedResponse(w, r)
	if !ok {
		return
	}
	var items []json.RawMessage
	_ = json.Unmarshal(rec.Input, &items)
	if r.URL.Query().Get("order") != "asc" {
		slices.Reverse(items) // newest first, as the API lists
	}
	list := map[string]any{"object": "list", "data": items, "has_more": false, "first_id": nil, "last_id": nil}
	if n := len(items); n > 0 {
		var first, last struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal(items[0], &first)
		_ = json.Unmarshal(items[n-1], &last)
		list["first_id"], list["last_id"] = first.ID, last.ID
	}
	writeJSON(w, http.StatusOK, list)
}

// deleteResponse serves DELETE /v1/responses/{id}; a running background
// response is cancelled first.
func (s *Server) deleteResponse(w http.ResponseWriter, r *http.Request) {
	rec, ok := s.storedResponse(w, r)
	if !ok {
		return
	}
	if !openai.Finished(rec.Status) {
		if _, err := s.cfg.Jobs.Cancel(r.Context(), rec.Scope, rec.ID); err != nil {
			s.log.Warn("could not cancel a response before deleting it", "response", rec.ID, "err", err)
		}
	}
	if err := s.cfg.Responses.Delete(r.Context(), rec.Scope, rec.ID); err != nil && !errors.Is(err, responses.ErrNotFound) {
		s.log.Error("store: could not delete a stored response", "err", err)
		s.fail(w, r, gateway.StoreUnavailable("delete the response"))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": rec.ID, "object": "response.deleted", "deleted": true})
}

// cancelResponse serves POST /v1/responses/{id}/cancel: a background
// response is interrupted and joined, here or on the host that runs it,
// and stays cancelled.
func (s *Server) cancelResponse(w http.ResponseWriter, r *http.Request) {
	rec, ok := s.storedResponse(w, r)
	if !ok {
		return
	}
	if !rec.Background {
		writeError(w, r, gateway.InvalidRequest("only a background response can be cancelled"))
		return
	}
	if !openai.Finished(rec.Status) {
		if _, err := s.cfg.Jobs.Cancel(r.Context(), rec.Scope, rec.ID); err != nil {
			if r.Context().Err() != nil {
				return
			}
			s.log.Error("store: could not cancel a background response", "response", rec.ID, "err", err)
			s.fail(w, r, gateway.StoreUnavailable("cancel the response"))
			return
		}
	}
	if rec, ok = s.storedResponse(w, r); ok {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(rec.Response)
	}
}
