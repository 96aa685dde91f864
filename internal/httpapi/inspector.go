package httpapi

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/meridian-gw/meridian/internal/anthropic"
	"github.com/meridian-gw/meridian/internal/gateway"
	"github.com/meridian-gw/meridian/internal/inspector"
	"github.com/meridian-gw/meridian/internal/telemetry"
	"github.com/meridian-gw/meridian/internal/web"
)

// inspectorRoutes are the request inspector: the captured requests as a
// page and as JSON (admin only, as every page).
type inspectorRoutes struct {
	inspector *inspector.Inspector // nil: nothing is captured, 404
	mode      string               // the server's --capture
	site      *pageRoutes
	log       *slog.Logger
}

// inspectorPage is how many captures a page lists.
const inspectorPage = 50

// filter reads the list's filter from the query.
func (s *inspectorRoutes) filter(r *http.Request) (web.InspectorFilter, inspector.Filter, int64, *gateway.Error) {
	q := r.URL.Query()
	wf := web.InspectorFilter{Key: q.Get("key"), Model: q.Get("model"), API: q.Get("api"), Status: q.Get("status")}
	f := inspector.Filter{Key: wf.Key, Model: wf.Model, API: wf.API, Host: q.Get("host"), OK: wf.Status == "ok", Failed: wf.Status == "error"}
	if wf.Status != "" && wf.Status != "ok" && wf.Status != "error" {
		return wf, f, 0, gateway.InvalidRequest(`status: want ok or error`)
	}
	var before int64
	if v := q.Get("before"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return wf, f, 0, gateway.InvalidRequest("before: want a capture id")
		}
		before = n
	}
	return wf, f, before, nil
}

// list serves GET /inspector (a page) and GET /inspector/requests (JSON).
func (s *inspectorRoutes) list(w http.ResponseWriter, r *http.Request) {
	if !s.on(w, r) {
		return
	}
	wf, f, before, ferr := s.filter(r)
	if ferr != nil {
		writeError(w, r, ferr)
		return
	}
	entries, err := s.inspector.List(r.Context(), f, before, inspectorPage)
	if err != nil {
		failWith(s.log, w, r, err)
		return
	}
	if r.URL.Path != "/inspector" {
		writeJSON(w, http.StatusOK, map[string]any{"capture": s.mode, "requests": entries})
		return
	}
	age, size := s.inspector.Bounds()
	p := web.InspectorPage{Mode: s.mode, F: wf, APIs: []string{telemetry.APIMessages, telemetry.APIChat, telemetry.APIResponses},
		Bounds: fmt.Sprintf("for %s and %d MiB at most", span(age), size>>20)}
	for _, e := range entries {
		rec := e.Record
		p.Rows = append(p.Rows, web.InspectorRow{ID: e.ID, Time: rec.Time, Host: e.Host, API: rec.API, Mode: e.Mode, Key: rec.Key,
			Model: cmp.Or(rec.Effective, rec.Model), Route: rec.Route, Verdict: rec.Verdict, Total: rec.Total,
			In: rec.Tokens.Input, Out: rec.Tokens.Output, RequestBytes: e.RequestBytes, AnswerBytes: e.AnswerBytes, Status: rec.Status})
	}
	if len(entries) == inspectorPage {
		q := r.URL.Query()
		q.Set("before", strconv.FormatInt(entries[len(entries)-1].ID, 10))
		p.Older = "/inspector?" + q.Encode()
	}
	s.site.page(w, r, http.StatusOK, func(b *bytes.Buffer) error { return s.site.pages.RenderInspector(b, s.site.chrome(r.Context()), p) })
}

// one serves GET /inspector/{id} (a page) and GET /inspector/requests/{id}
// (JSON).
func (s *inspectorRoutes) one(w http.ResponseWriter, r *http.Request) {
	if !s.on(w, r) {
		return
	}
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		writeError(w, r, gateway.InvalidRequest("a capture's id is a number"))
		return
	}
	e, found, err := s.inspector.Get(r.Context(), id)
	if err != nil {
		failWith(s.log, w, r, err)
		return
	}
	if !found {
		writeError(w, r, &gateway.Error{Status: http.StatusNotFound, Type: anthropic.ErrNotFound,
			Message: fmt.Sprintf("no captured request %d: it was never captured, or was pruned", id)})
		return
	}
	if strings.HasPrefix(r.URL.Path, "/inspector/requests/") {
		writeJSON(w, http.StatusOK, e)
		return
	}
	s.site.page(w, r, http.StatusOK, func(b *bytes.Buffer) error {
		return s.site.pages.RenderCapture(b, s.site.chrome(r.Context()), capturePage(e))
	})
}

// span says a bound's age in the largest whole unit.
func span(d time.Duration) string {
	switch {
	case d%(24*time.Hour) == 0:
		return fmt.Sprintf("%d days", d/(24*time.Hour))
	case d%time.Hour == 0:
		return fmt.Sprintf("%d hours", d/time.Hour)
	}
	return d.String()
}

// on answers 404 when nothing is captured on this host.
func (s *inspectorRoutes) on(w http.ResponseWriter, r *http.Request) bool {
	if s.inspector == nil {
		writeError(w, r, &gateway.Error{Status: http.StatusNotFound, Type: anthropic.ErrNotFound,
			Message: "the request inspector is off: this meridian keeps no store of captures"})
		return false
	}
	return true
}

// capturePage is one capture as its page shows it: JSON parts indented.
func capturePage(e inspector.Entry) web.CapturePage {
	rec := e.Record
	p := web.CapturePage{ID: e.ID, Time: rec.Time.UTC().Format(time.DateTime + " UTC"), Host: e.Host, API: rec.API, Client: rec.Client,
		Key: rec.Key, Model: rec.Model, Effective: rec.Effective, Profile: rec.Profile, Route: rec.Route, Conversation: rec.Conversation,
		Verdict: rec.Verdict, Error: strings.TrimSpace(rec.ErrorType + " " + rec.ErrorMessage), Mode: e.Mode, Live: rec.Live,
		Replay: rec.Replay, Stream: rec.Stream, Status: rec.Status, Queue: rec.QueueWait, TTFT: rec.TTFT, Total: rec.Total,
		In: rec.Tokens.Input, Out: rec.Tokens.Output, CacheRead: rec.Tokens.CacheRead, CacheWrite: rec.Tokens.CacheWrite,
		Cost: rec.Cost, RequestBytes: e.RequestBytes, AnswerBytes: e.AnswerBytes, Cut: strings.Join(e.Cut, ", "),
		Request: indented(e.Request), Answer: e.Answer}
	names := make([]string, 0, len(e.Headers))
	for n := range e.Headers {
		names = append(names, n)
	}
	sort.Strings(names)
	var h strings.Builder
	for _, n := range names {
		fmt.Fprintf(&h, "%s: %s\n", n, e.Headers[n])
	}
	p.Headers = h.String()
	var written []string
	for _, part := range e.Written {
		written = append(written, indented(part))
	}
	p.Written = strings.Join(written, "\n\n")
	return p
}

// indented is JSON laid out to read; anything else as it is.
func indented(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Indent(&b, raw, "", "  ") != nil {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
		return string(raw)
	}
	return b.String()
}
