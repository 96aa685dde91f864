package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"

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
	h := openai.History{Sealer: s.cfg.Responses.Sealer}
	if req.Previous == "" {
		return h, nil
	}
	notFound := func(msg string) *gateway.Error {
		e := gateway.InvalidRequest(msg)
		e.Param = "previous_response_id"
		return e
	}
	if s.cfg.Responses.Store == nil {
		return h, notFound("previous_response_id: this server stores no responses; send the whole conversation")
	}
	var chain [][]openai.Item
	seen := map[string]bool{}
	for id := req.Previous; id != ""; {
		if seen[id] {
			break
		}
		seen[id] = true
		rec, err := s.cfg.Responses.Store.Get(ctx, scope, id)
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
	log, err := s.cfg.Responses.Jobs.Start(c.id, out.current, func(ctx context.Context, log *responses.EventLog) {
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
			s.log.ErrorContext(r.Context(), "store: could not begin a background response's event log", "err", err)
			ge = gateway.StoreUnavailable("begin the background response")
		}
		s.storeEnd(r.Context(), c, c.meta.Failed(nil, ge.Status, ge.Message, ge.RetryAfterSeconds()))
		s.fail(w, r, ge)
		return
	}
	tr.HandOff()
	if c.req.Stream {
		s.stored.followLog(w, r, log, -1)
		return
	}
	writeJSON(w, http.StatusOK, c.meta.Snapshot(openai.StatusQueued, nil))
}
