package httpapi

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/meridian-gw/meridian/internal/answers"
	"github.com/meridian-gw/meridian/internal/anthropic"
	"github.com/meridian-gw/meridian/internal/gateway"
	"github.com/meridian-gw/meridian/internal/journal"
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
	scope := credentialScope(r)
	results := resultIDs(req)
	if s.cfg.Answers == nil || (id == "" && len(results) == 0) {
		s.retire(scope, results)
		serve(w)
		return
	}
	key := requestKey(r, id, raw)
	saved, run, err := s.cfg.Answers.Begin(r.Context(), scope, key)
	switch {
	case errors.Is(err, answers.ErrBusy):
		writeError(w, r, &gateway.Error{Status: http.StatusTooManyRequests, Type: anthropic.ErrRateLimit, RetryAfter: time.Second,
			Message: "too many identical requests are waiting for the first one's answer; retry shortly"})
		return
	case err != nil:
		return // the client left while it waited
	case saved != nil:
		s.log.Info("answered from a saved answer: the request was a retry", "path", r.URL.Path, "bytes", len(saved.Body))
		tr := telemetry.From(r.Context())
		tr.Request(req.Model, req.Stream)
		tr.Replayed()
		replayAnswer(w, saved)
		return
	}
	defer run.Done()
	if id != "" && s.cfg.Journal != nil {
		if err := s.cfg.Journal.Begin(r.Context(), key); err != nil {
			writeError(w, r, s.journalError(err))
			return
		}
		defer func() {
			if err := s.cfg.Journal.End(r.Context(), key); err != nil {
				s.log.Warn("could not clear a finished request from the journal", "err", err)
			}
		}()
	}
	s.retire(scope, results)
	rec := &recorder{ResponseWriter: w, limit: s.cfg.AnswerBytes}
	serve(rec)
	if rec.done && !rec.over {
		run.Save(answers.Answer{Status: rec.status, Header: rec.header, Body: rec.body, Calls: rec.calls})
	}
}

// retire ends the replay of the answers whose tool calls these results
// answer: the request that asked for them is now a new turn, not a retry.
func (s *Server) retire(scope string, results []string) {
	if s.cfg.Answers != nil {
		s.cfg.Answers.Retire(scope, results)
	}
}

func (s *Server) journalError(err error) *gateway.Error {
	switch {
	case errors.Is(err, journal.ErrUnknownOutcome):
		return &gateway.Error{Status: http.StatusConflict, Type: "conflict_error", Message: "this request (same request id and body) " +
			"started before meridian restarted and never finished: it may have run, and its outcome is unknown. " +
			"It is not run a second time; send it with a new request id to run it again"}
	case errors.Is(err, journal.ErrRunning):
		return &gateway.Error{Status: http.StatusConflict, Type: "conflict_error", RetryAfter: time.Second,
			Message: "an identical request (same request id and body) is running; retry when it has finished"}
	case errors.Is(err, journal.ErrFull):
		return overloaded("too many requests with request ids are unfinished; retry later")
	}
	s.log.Error("store: could not journal a request", "err", err)
	return gateway.StoreUnavailable("record the request in its journal")
}

// requestKey names a request exactly: its route, its explicit id and its
// whole body. Headers that change between an SDK's retries (its retry
// count) are no part of it.
func requestKey(r *http.Request, id string, body []byte) string {
	h := sha256.New()
	for _, part := range []string{r.Method, r.URL.Path, r.URL.RawQuery, id} {
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
func replayAnswer(w http.ResponseWriter, a *answers.Answer) {
	h := w.Header()
	for k, v := range a.Header {
		h[k] = v
	}
	h.Set(headerReplayed, "true")
	w.WriteHeader(a.Status)
	_, _ = w.Write(a.Body)
}

// recorder keeps what a response writes, for its retries: the status, the
// headers and the bytes, up to a limit. Bytes are kept before they are
// written, so an answer whose last write failed (the client broke off at
// the end) is kept whole. The output that completes the answer marks it
// done with its tool calls.
type recorder struct {
	http.ResponseWriter
	limit  int
	status int
	header map[string][]string
	body   []byte
	over   bool
	done   bool
	calls  []string
}

func (w *recorder) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
		w.header = w.ResponseWriter.Header().Clone()
		delete(w.header, "Date")
		delete(w.header, "Content-Length")
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *recorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if !w.over {
		if len(w.body)+len(b) > w.limit {
			w.over, w.body = true, nil
		} else {
			w.body = append(w.body, b...)
		}
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach Flush and deadlines.
func (w *recorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// answered marks a response complete: its whole answer was rendered. Only
// a complete answer is saved for retries.
func answered(w http.ResponseWriter, content []json.RawMessage) {
	if rec, ok := w.(*recorder); ok {
		rec.done, rec.calls = true, callIDs(content)
	}
}
