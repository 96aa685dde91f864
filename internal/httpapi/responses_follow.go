package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/meridian-gw/meridian/internal/anthropic"
	"github.com/meridian-gw/meridian/internal/gateway"
	"github.com/meridian-gw/meridian/internal/openai"
	"github.com/meridian-gw/meridian/internal/responses"
)

// storedResponses are the routes of responses already made: read one,
// its input items, its event stream again, delete or cancel it.
type storedResponses struct {
	store  *responses.Store // nil: nothing is stored
	jobs   *responses.Jobs
	bodies bodies
	ping   time.Duration
	log    *slog.Logger
}

// storedResponse finds a response of the asking credential, answering
// 404 itself when there is none.
func (s *storedResponses) storedResponse(w http.ResponseWriter, r *http.Request) (responses.Record, bool) {
	id := r.PathValue("id")
	if s.store == nil {
		writeError(w, r, &gateway.Error{Status: http.StatusNotFound, Type: anthropic.ErrNotFound, Message: "response " + strconv.Quote(id) + " not found"})
		return responses.Record{}, false
	}
	rec, err := s.store.Get(r.Context(), credentialScope(r), id)
	switch {
	case errors.Is(err, responses.ErrNotFound):
		writeError(w, r, &gateway.Error{Status: http.StatusNotFound, Type: anthropic.ErrNotFound, Message: "response " + strconv.Quote(id) + " not found"})
		return rec, false
	case err != nil:
		s.log.ErrorContext(r.Context(), "store: could not read a stored response", "err", err)
		failWith(s.log, w, r, gateway.StoreUnavailable("read the response"))
		return rec, false
	}
	return rec, true
}

// getResponse serves GET /v1/responses/{id}: the stored object, its live
// status while it runs here, or — with ?stream=true — its event stream
// from ?starting_after= on.
func (s *storedResponses) getResponse(w http.ResponseWriter, r *http.Request) {
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
		kept, err := s.jobs.Keeps(r.Context(), rec.ID, after)
		switch {
		case errors.Is(err, responses.ErrNoLog):
			writeError(w, r, gateway.InvalidRequest("response "+strconv.Quote(rec.ID)+" has no events kept: GET it without stream for the result"))
		case err != nil:
			s.log.ErrorContext(r.Context(), "store: could not read a background response's events", "err", err)
			failWith(s.log, w, r, gateway.StoreUnavailable("read the response's events"))
		case !kept:
			writeError(w, r, gateway.InvalidRequest("the events after "+strconv.Itoa(after)+" are no longer kept (the event log is bounded); GET the response without stream for the result"))
		default:
			s.follow(w, r, rec.ID, after)
		}
		return
	}
	body := rec.Response
	if current, ok := s.jobs.Current(rec.ID); ok && !openai.Finished(rec.Status) {
		body = current // the store learns the end only after the job's last event
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// streamAsked reports a GET that asks for the event stream: ?stream=true,
// or — as the official SDKs send it — {"stream": true} as the body.
func (s *storedResponses) streamAsked(w http.ResponseWriter, r *http.Request) bool {
	if stream, _ := strconv.ParseBool(r.URL.Query().Get("stream")); stream {
		return true
	}
	if r.ContentLength == 0 {
		return false
	}
	var body struct {
		Stream bool `json:"stream"`
	}
	raw, _ := s.bodies.readLimit(w, r, 1024)
	_ = json.Unmarshal(raw, &body)
	return body.Stream
}

// inputItems serves GET /v1/responses/{id}/input_items: the items the
// response answered, as a list.
func (s *storedResponses) inputItems(w http.ResponseWriter, r *http.Request) {
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
func (s *storedResponses) deleteResponse(w http.ResponseWriter, r *http.Request) {
	rec, ok := s.storedResponse(w, r)
	if !ok {
		return
	}
	if !openai.Finished(rec.Status) {
		if _, err := s.jobs.Cancel(r.Context(), rec.Scope, rec.ID); err != nil {
			s.log.WarnContext(r.Context(), "could not cancel a response before deleting it", "response", rec.ID, "err", err)
		}
	}
	if err := s.store.Delete(r.Context(), rec.Scope, rec.ID); err != nil && !errors.Is(err, responses.ErrNotFound) {
		s.log.ErrorContext(r.Context(), "store: could not delete a stored response", "err", err)
		failWith(s.log, w, r, gateway.StoreUnavailable("delete the response"))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": rec.ID, "object": "response.deleted", "deleted": true})
}

// cancelResponse serves POST /v1/responses/{id}/cancel: a background
// response is interrupted and joined, here or on the host that runs it,
// and stays cancelled.
func (s *storedResponses) cancelResponse(w http.ResponseWriter, r *http.Request) {
	rec, ok := s.storedResponse(w, r)
	if !ok {
		return
	}
	if !rec.Background {
		writeError(w, r, gateway.InvalidRequest("only a background response can be cancelled"))
		return
	}
	if !openai.Finished(rec.Status) {
		if _, err := s.jobs.Cancel(r.Context(), rec.Scope, rec.ID); err != nil {
			if r.Context().Err() != nil {
				return
			}
			s.log.ErrorContext(r.Context(), "store: could not cancel a background response", "response", rec.ID, "err", err)
			failWith(s.log, w, r, gateway.StoreUnavailable("cancel the response"))
			return
		}
	}
	if rec, ok = s.storedResponse(w, r); ok {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(rec.Response)
	}
}

// follow streams background response id's events after sequence number
// after, live until it ends, from wherever it runs.
func (s *storedResponses) follow(w http.ResponseWriter, r *http.Request, id string, after int) {
	s.streamFrames(w, r, func(ctx context.Context, write func([][]byte) error) error {
		return s.jobs.Follow(ctx, id, after, write)
	})
}

// followLog streams a job's own log, as the request that started it does.
func (s *storedResponses) followLog(w http.ResponseWriter, r *http.Request, log *responses.EventLog, after int) {
	s.streamFrames(w, r, func(ctx context.Context, write func([][]byte) error) error { return log.Follow(ctx, after, write) })
}

// streamFrames writes the frames follow hands it (rendered when the run
// recorded them) as an event stream through the one SSE writer, which
// pings while it is quiet.
func (s *storedResponses) streamFrames(w http.ResponseWriter, r *http.Request, follow func(context.Context, func([][]byte) error) error) {
	o := newSSEWriter(w, &responsesSSE{}, s.ping)
	defer o.stopPings()
	if err := o.writeFrames(nil); err != nil {
		return
	}
	if err := follow(r.Context(), o.writeFrames); err != nil && r.Context().Err() == nil {
		s.log.DebugContext(r.Context(), "background stream ended early", "err", err)
	}
}
