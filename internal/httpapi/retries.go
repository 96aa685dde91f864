package httpapi

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/meridian-gw/meridian/internal/answers"
	"github.com/meridian-gw/meridian/internal/anthropic"
	"github.com/meridian-gw/meridian/internal/dispatch"
	"github.com/meridian-gw/meridian/internal/gateway"
	"github.com/meridian-gw/meridian/internal/telemetry"
)

// Headers of request identity and replay.
const (
	headerIdempotency = "Idempotency-Key"
	headerRequestID   = "X-Meridian-Request-Id"
	headerReplayed    = "X-Meridian-Replayed"
)

// maxRequestID bounds an explicit request id.
const maxRequestID = 256

// once serves a request that may be the retry of one already answered.
// A request is taken for a retry when re-sending it can mean nothing else:
// it carries tool results (the same results delivered twice), or the
// client named it with an explicit request id. Such a request is answered
// from its saved answer when there is one, waits for an identical request
// still running, or runs and saves its answer for its own retries. A
// request with an explicit id is also journaled while it runs, so that
// after a crash it is refused with an unknown outcome rather than run
// blindly again.
func (s *Server) once(w http.ResponseWriter, r *http.Request, raw []byte, req *anthropic.MessagesRequest, serve func(http.ResponseWriter)) {
	id := r.Header.Get(headerIdempotency)
	if id == "" {
		id = r.Header.Get(headerRequestID)
	}
	if len(id) > maxRequestID {
		writeError(w, r, gateway.InvalidRequest("the request id (Idempotency-Key) is longer than 256 bytes"))
		return
	}
	retry := dispatch.Retry{Scope: credentialScope(r), Named: id != "", Results: resultIDs(req), CacheOnly: onlyIfCached(r.Header)}
	if id == "" && len(retry.Results) == 0 {
		if retry.CacheOnly {
			ge := *dispatch.ErrNotCached
			ge.Message = "only-if-cached needs the request's id (X-Meridian-Request-Id or Idempotency-Key): no answer of a request without one is saved"
			writeError(w, r, &ge)
			return
		}
		serve(w)
		return
	}
	retry.Key = requestKey(r, id, raw)
	saved, run, err := s.dispatch.Once(r.Context(), retry)
	var ge *gateway.Error
	switch {
	case errors.As(err, &ge):
		writeError(w, r, ge)
		return
	case err != nil:
		return // the client left while it waited
	case saved != nil:
		s.log.InfoContext(r.Context(), "answered from a saved answer: the request was a retry", "path", r.URL.Path, "bytes", len(saved.Body))
		tr := telemetry.From(r.Context())
		tr.Request(req.Model, req.Stream)
		tr.Replayed()
		if replayAnswer(w, saved) == nil {
			tr.Delivered()
		}
		return
	}
	defer run.Done()
	serve(&recorder{ResponseWriter: w, limit: s.cfg.Models.AnswerBytes, save: run.Save})
}

// onlyIfCached reports whether the request's Cache-Control asks for a
// saved answer only (RFC 9111's only-if-cached directive).
func onlyIfCached(h http.Header) bool {
	for _, v := range h.Values("Cache-Control") {
		for d := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(d), "only-if-cached") {
				return true
			}
		}
	}
	return false
}

// requestKey names a request exactly: its route as the client sent it
// (with the prefix of a mounted backend, so Claude's and Antigravity's
// requests under --backend combined never share a key in the journal they
// share), its explicit id and its whole body. Headers that change between
// an SDK's retries (its retry count) are no part of it.
func requestKey(r *http.Request, id string, body []byte) string {
	route := r.RequestURI
	if route == "" {
		route = r.URL.RequestURI()
	}
	h := sha256.New()
	for _, part := range []string{r.Method, route, id} {
		h.Write([]byte(strconv.Itoa(len(part)) + ":" + part))
	}
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

// resultIDs lists the tool results the request's last message delivers.
func resultIDs(req *anthropic.MessagesRequest) []string {
	if req == nil || len(req.Messages) == 0 {
		return nil
	}
	last := req.Messages[len(req.Messages)-1]
	if last.Role != anthropic.RoleUser {
		return nil
	}
	var ids []string
	for _, b := range last.Content {
		if b.Type == anthropic.BlockToolResult {
			ids = append(ids, b.ToolUseID)
		}
	}
	return ids
}

// callIDs lists the tool calls in an answer's blocks.
func callIDs(content []json.RawMessage) []string {
	var ids []string
	for _, raw := range content {
		var b struct{ Type, ID string }
		if json.Unmarshal(raw, &b) == nil && b.Type == anthropic.BlockToolUse {
			ids = append(ids, b.ID)
		}
	}
	return ids
}

// replayAnswer writes a saved answer as it first went out, saying so.
func replayAnswer(w http.ResponseWriter, a *answers.Answer) error {
	h := w.Header()
	for k, v := range a.Header {
		h[k] = v
	}
	h.Set(headerReplayed, "true")
	w.WriteHeader(a.Status)
	_, err := w.Write(a.Body)
	return err
}

// recorder keeps what a response writes, for its retries: the status, the
// headers and the bytes, up to a limit. Bytes are kept before they are
// written, and a complete answer is saved before its last bytes go out
// (see answered): a retry that arrives anywhere once the client could have
// the whole answer finds it saved, and an answer whose last write failed
// (the client broke off at the end) is kept whole.
type recorder struct {
	http.ResponseWriter
	limit  int
	save   func(answers.Answer)
	status int
	header map[string][]string
	body   []byte
	over   bool
	done   bool
}

func (w *recorder) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
		w.header = w.snapshot()
	}
	w.ResponseWriter.WriteHeader(code)
}

// snapshot is the headers as a replay repeats them: not those of the one
// response (its date, length, and the host that served it, which for a
// replay is the host replaying).
func (w *recorder) snapshot() map[string][]string {
	h := w.ResponseWriter.Header().Clone()
	delete(h, "Date")
	delete(h, "Content-Length")
	delete(h, headerServedByHost)
	return h
}

func (w *recorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	w.keep(b)
	return w.ResponseWriter.Write(b)
}

// keep adds b to the answer kept, unless that grows past the limit or
// the answer is complete.
func (w *recorder) keep(b []byte) {
	if w.over || w.done {
		return
	}
	if len(w.body)+len(b) > w.limit {
		w.over, w.body = true, nil
		return
	}
	w.body = append(w.body, b...)
}

// complete saves the answer: what was written, and rest, the bytes that
// end it and are about to be written (they are kept here, so Write must
// not keep them again).
func (w *recorder) complete(content []json.RawMessage, rest []byte) {
	if w.done {
		return
	}
	status, header := w.status, w.header
	if status == 0 {
		status, header = http.StatusOK, w.snapshot()
	}
	w.keep(rest)
	w.done = true
	if !w.over && w.save != nil {
		w.save(answers.Answer{Status: status, Header: header, Body: w.body, Calls: callIDs(content)})
	}
}

// Unwrap lets http.ResponseController reach Flush and deadlines.
func (w *recorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// answered marks a response complete, before rest, its last bytes, are
// written: its whole answer is rendered, and a response that saves its
// answer for retries saves it now — the design keeps an answer saved
// before its terminal delivery.
func answered(w http.ResponseWriter, content []json.RawMessage, rest []byte) {
	if rec, ok := w.(*recorder); ok {
		rec.complete(content, rest)
	}
}
