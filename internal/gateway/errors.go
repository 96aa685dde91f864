package gateway

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/meridian-gw/meridian/internal/anthropic"
	"github.com/meridian-gw/meridian/internal/backend"
	"github.com/meridian-gw/meridian/internal/retryafter"
)

// Error is a failed request as the client should see it: an HTTP status,
// an error type from the Anthropic vocabulary (other protocols map it), a
// message, and for 429/503/529 the wait before retrying.
type Error struct {
	Status  int
	Type    string
	Message string
	// Param names the request field at fault, when known (OpenAI errors
	// carry it).
	Param      string
	RetryAfter time.Duration
	// WaitSource says where RetryAfter came from, for logs.
	WaitSource retryafter.Source
	// Code is the backend's name for the failure, never shown to clients.
	Code string
}

func (e *Error) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Type, e.Message) }

// RetryAfterSeconds is the wait in whole seconds, 0 when there is none.
func (e *Error) RetryAfterSeconds() int {
	if e.RetryAfter <= 0 {
		return 0
	}
	return retryafter.Seconds(e.RetryAfter)
}

// newError builds an Error, computing the wait for statuses that carry one
// from the message as it came; the client sees it redacted.
func newError(status int, typ, msg string, facts retryafter.Facts) *Error {
	e := &Error{Status: status, Type: typ, Message: redact(msg)}
	facts.Status = status
	if facts.Message == "" {
		facts.Message = msg
	}
	e.RetryAfter, e.WaitSource = retryafter.Compute(facts)
	return e
}

// Unavailable is a 503 with the wait for unavailability.
func Unavailable(msg string) *Error {
	return newError(http.StatusServiceUnavailable, anthropic.ErrAPI, msg, retryafter.Facts{Now: time.Now()})
}

// storeFailure is a read or write of the store that failed: the client
// hears 503 with a wait, never the database's own words (they name files
// and engines); the log keeps them.
func (g *Gateway) storeFailure(what string, err error) *Error {
	g.log.Error("store: could not "+what, "err", err)
	return StoreUnavailable(what)
}

// Redact is msg as a client may read it: local paths, URLs and addresses
// replaced by placeholders.
func Redact(msg string) string { return redact(msg) }

// StoreUnavailable is the 503 for a store that failed to what ("load the
// conversation"): a full disk or a database another process holds is
// usually over in moments.
func StoreUnavailable(what string) *Error {
	return Unavailable("meridian could not " + what + " in its store; retry shortly")
}

// InvalidRequest is a 400 for a request the gateway cannot serve.
func InvalidRequest(msg string) *Error {
	return &Error{Status: http.StatusBadRequest, Type: anthropic.ErrInvalidRequest, Message: msg}
}

// classify maps a failed turn of cli to the client's error. It is pure:
// the observed rate-limit window and the clock come in as arguments.
func classify(f *backend.Failure, cli CLI, window, now time.Time) *Error {
	facts := retryafter.Facts{
		UpstreamDelay: f.RetryDelay,
		ResetsAt:      f.ResetsAt,
		Message:       f.Message,
		WindowReset:   window,
		Now:           now,
	}
	switch f.Kind {
	case backend.FailPromptTooLong:
		return newError(http.StatusBadRequest, anthropic.ErrInvalidRequest, "prompt is too long: "+f.Message, facts)
	case backend.FailUnavailable:
		return newError(http.StatusServiceUnavailable, anthropic.ErrAPI, f.Message, facts)
	case backend.FailFormat:
		return newError(http.StatusBadGateway, anthropic.ErrAPI, "the model's answer does not fit the requested format: "+f.Message, facts)
	case backend.FailLimit, backend.FailBackend:
		return newError(http.StatusInternalServerError, anthropic.ErrAPI, f.Message, facts)
	}
	status, typ := upstreamStatus(f.Status)
	msg := f.Message
	if status == http.StatusUnauthorized {
		msg += " (the " + cli.Name + " CLI is not logged in or its credentials were refused: " + cli.LoginHint + ")"
	}
	e := newError(status, typ, msg, facts)
	e.Code = f.Code
	return e
}

// upstreamStatus maps the model API's HTTP status to the client's.
func upstreamStatus(s int) (int, string) {
	switch {
	case s == 0:
		// No HTTP answer at all: the API could not be reached.
		return http.StatusServiceUnavailable, anthropic.ErrAPI
	case s == http.StatusTooManyRequests:
		return s, anthropic.ErrRateLimit
	case s == anthropic.StatusOverloaded:
		return s, anthropic.ErrOverloaded
	case s == http.StatusServiceUnavailable:
		return s, anthropic.ErrAPI
	case s >= 500:
		return http.StatusBadGateway, anthropic.ErrAPI
	case s == http.StatusUnauthorized, s == http.StatusForbidden, s == http.StatusNotFound,
		s == http.StatusRequestEntityTooLarge, s == http.StatusBadRequest:
		return s, anthropic.ErrorTypeForStatus(s)
	}
	return http.StatusBadGateway, anthropic.ErrAPI
}

// What a client-facing message must not show: the machine's paths (the
// CLI's location, a working directory) and the upstream's address.
var (
	redactURL     = regexp.MustCompile(`\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s"'<>)]+`)
	redactAddress = regexp.MustCompile(`\b(?:\d{1,3}(?:\.\d{1,3}){3}|localhost|\[[0-9a-fA-F:.]+\]|[a-zA-Z0-9-]+(?:\.[a-zA-Z0-9-]+)+):\d{1,5}\b`)
	redactPath    = regexp.MustCompile(`(^|[\s"'(=])(/[A-Za-z0-9._~@%+-]+(?:/[A-Za-z0-9._~@%+-]*)*)`)
)

// redact removes local paths, URLs and network addresses from a message
// that reaches a client, in words that still read as a sentence: a path
// keeps only its file name (…/claude), a URL and an address are named as
// such. The log keeps the original.
func redact(msg string) string {
	msg = redactURL.ReplaceAllString(msg, "a URL")
	msg = redactAddress.ReplaceAllString(msg, "an address")
	return redactPath.ReplaceAllStringFunc(msg, func(m string) string {
		i := strings.IndexByte(m, '/')
		base := m[strings.LastIndexByte(strings.TrimRight(m, "/"), '/')+1:]
		return m[:i] + "…/" + strings.TrimRight(base, "/")
	})
}
