package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"strconv"

	"github.com/meridian-gw/meridian/internal/anthropic"
	"github.com/meridian-gw/meridian/internal/dispatch"
	"github.com/meridian-gw/meridian/internal/gateway"
)

// sessionRoutes show and cancel conversations and say what runs now: the
// live work, in the profile a request names or in every one.
type sessionRoutes struct {
	profiles *dispatch.Dispatcher
	mounted  []*gateway.Gateway // the other backends on this listener
	host     string
	store    func(ctx context.Context, detailed bool) *storeHealth
	log      *slog.Logger
}

// gatewayOf is the gateway of the request's profile.
func (sr *sessionRoutes) gatewayOf(ctx context.Context) *gateway.Gateway {
	if gw := named(ctx); gw != nil {
		return gw
	}
	return sr.profiles.Default()
}

// list serves GET /v1/sessions: the most recently used
// conversations (?limit=, default 100, at most 1000).
func (sr *sessionRoutes) list(w http.ResponseWriter, r *http.Request) {
	limit := 100
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			writeError(w, r, gateway.InvalidRequest("limit: must be a positive integer"))
			return
		}
		limit = min(n, 1000)
	}
	// A request that names a profile sees that profile's conversations
	// only; one that names none sees every profile's, newest first.
	gws := sr.profiles.Gateways()
	if gw := named(r.Context()); gw != nil {
		gws = []*gateway.Gateway{gw}
	}
	list := []gateway.SessionInfo{}
	for _, gw := range gws {
		some, err := gw.Sessions(r.Context(), limit)
		if err != nil {
			sr.log.Error("store: could not list conversations", "err", err)
			failWith(sr.log, w, r, gateway.StoreUnavailable("list the conversations"))
			return
		}
		list = append(list, some...)
	}
	slices.SortStableFunc(list, func(a, b gateway.SessionInfo) int { return b.UpdatedAt.Compare(a.UpdatedAt) })
	writeJSON(w, http.StatusOK, map[string]any{"data": list[:min(len(list), limit)]})
}

// get serves GET /v1/sessions/{key}.
func (sr *sessionRoutes) get(w http.ResponseWriter, r *http.Request) {
	key := r.PathValue("key")
	info, ok, err := sr.gatewayOf(r.Context()).Session(r.Context(), key)
	switch {
	case err != nil:
		failWith(sr.log, w, r, err)
	case !ok:
		writeError(w, r, &gateway.Error{Status: http.StatusNotFound, Type: anthropic.ErrNotFound, Message: "no conversation with key " + strconv.Quote(key)})
	default:
		writeJSON(w, http.StatusOK, info)
	}
}

// cancel serves POST /v1/sessions/{key}/cancel: the conversation's
// running turn and the requests of every conversation below it are
// cancelled; their clients hear why.
func (sr *sessionRoutes) cancel(w http.ResponseWriter, r *http.Request) {
	key := r.PathValue("key")
	cancelled, known, err := sr.gatewayOf(r.Context()).CancelSession(r.Context(), key)
	switch {
	case err != nil:
		failWith(sr.log, w, r, err)
	case !known:
		writeError(w, r, &gateway.Error{Status: http.StatusNotFound, Type: anthropic.ErrNotFound, Message: "no conversation with key " + strconv.Quote(key)})
	default:
		if cancelled == nil {
			cancelled = []string{}
		}
		writeJSON(w, http.StatusOK, map[string]any{"key": key, "cancelled": cancelled})
	}
}

// inflight serves GET /inflight: what runs and waits now, in the profile
// the request names, else in every profile and backend on the listener.
func (sr *sessionRoutes) inflight(w http.ResponseWriter, r *http.Request) {
	if gw := named(r.Context()); gw != nil {
		writeJSON(w, http.StatusOK, gw.Inflight())
		return
	}
	in := gateway.MergeInflight(append(sr.profiles.Gateways(), sr.mounted...))
	writeJSON(w, http.StatusOK, struct {
		Host  string       `json:"host,omitempty"`
		Store *storeHealth `json:"store,omitempty"`
		gateway.Inflight
	}{sr.host, sr.store(r.Context(), true), in})
}
