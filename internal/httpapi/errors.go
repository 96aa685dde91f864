package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/meridian-gw/meridian/internal/anthropic"
	"github.com/meridian-gw/meridian/internal/gateway"
	"github.com/meridian-gw/meridian/internal/openai"
	"github.com/meridian-gw/meridian/internal/telemetry"
)

// openAIRequest reports whether a request speaks OpenAI, whose errors take
// the OpenAI shape: its own paths, and the shared model list when the
// client does not announce itself as an Anthropic one.
func openAIRequest(r *http.Request) bool {
	p := strings.TrimPrefix(r.URL.Path, "/v1")
	for _, prefix := range []string{"/chat/", "/responses", "/completions", "/embeddings"} {
		if strings.HasPrefix(p, prefix) {
			return true
		}
	}
	return strings.HasPrefix(p, "/models") && !anthropicClient(r)
}

// writeError renders an error envelope in the request's protocol, with its
// status and, for statuses that carry one, Retry-After.
func writeError(w http.ResponseWriter, r *http.Request, e *gateway.Error) {
	telemetry.From(r.Context()).Failed(e.Status, e.Type, e.Message)
	retryHeaders(w.Header(), e)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.Status)
	if openAIRequest(r) {
		_, _ = w.Write(openai.AppendError(nil, e.Status, e.Message, e.Param, 0))
		return
	}
	_, _ = w.Write(anthropic.AppendError(nil, e.Type, e.Message, 0))
}

// retryHeaders sets Retry-After for errors that carry a wait, and
// X-Should-Retry: false for those another try cannot fix.
func retryHeaders(h http.Header, e *gateway.Error) {
	if secs := e.RetryAfterSeconds(); secs > 0 {
		h.Set("Retry-After", strconv.Itoa(secs))
	}
	if !retryable(e.Status) {
		// The Anthropic and OpenAI SDKs, and Claude Code's own retry
		// loop, honour this: without it Claude Code retries a refused key
		// for three minutes before it says anything.
		h.Set("X-Should-Retry", "false")
	}
}

// retryable says whether sending the same request again may succeed
// without anyone changing anything: a timeout, a conflict, a limit, or
// a failure on the gateway's or the upstream's side.
func retryable(status int) bool {
	return status < 400 || status >= 500 || status == http.StatusRequestTimeout || status == http.StatusConflict ||
		status == http.StatusTooManyRequests
}

// errShutdown is why running requests are cancelled when the drain time
// runs out: unlike a client that left, their client still waits for an
// answer, and gets one it can act on.
var errShutdown = errors.New("meridian is shutting down")

// shutdownError answers a request that shutdown cut short.
func shutdownError() *gateway.Error {
	return gateway.Unavailable("meridian is shutting down and could not finish this request; send it again")
}

// settled is the error a request's client should hear: a shutdown is
// told as such, not mistaken for a client that left.
func settled(r *http.Request, err error) error {
	if err != nil && errors.Is(context.Cause(r.Context()), errShutdown) {
		return shutdownError()
	}
	return err
}

// fail renders an error as the whole response.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) { failWith(s.log, w, r, err) }

// failWith renders an error as the whole response, logging to log what
// the client is not told.
func failWith(log *slog.Logger, w http.ResponseWriter, r *http.Request, err error) {
	err = settled(r, err)
	if r.Context().Err() != nil && !errors.Is(context.Cause(r.Context()), errShutdown) {
		return // the client is gone; nobody reads an answer
	}
	var ge *gateway.Error
	if !errors.As(err, &ge) {
		if errors.Is(err, context.Canceled) {
			return
		}
		log.Error("request failed", "err", err)
	}
	writeError(w, r, asGatewayError(err))
}

// asGatewayError is err as the client sees it: an unexpected failure is a
// 500 that says nothing of its cause (which may name files or a
// database); the log has it.
func asGatewayError(err error) *gateway.Error {
	var ge *gateway.Error
	if errors.As(err, &ge) {
		return ge
	}
	return &gateway.Error{Status: http.StatusInternalServerError, Type: anthropic.ErrAPI,
		Message: "meridian failed to answer this request; its log says why"}
}
