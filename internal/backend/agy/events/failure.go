package events

import (
	"encoding/json"
	"regexp"
	"strings"
	"time"

	"github.com/meridian-gw/meridian/internal/backend"
)

// The HTTP statuses agy's failures stand for (net/http's names, spelled
// out: this package does no I/O). StatusOverloaded is the Anthropic status
// for a model without capacity, which agy reports as
// MODEL_CAPACITY_EXHAUSTED.
const (
	statusBadRequest      = 400
	statusUnauthorized    = 401
	statusTooManyRequests = 429
	statusUnavailable     = 503
	StatusOverloaded      = 529
)

// quotaReset reads the wait out of agy's quota text ("… Resets in
// 120h9m43s.").
var quotaReset = regexp.MustCompile(`Resets in ([0-9hms.]+?)\.?$`)

// SoftDenyMessage is what a client hears when agy refused, without asking,
// a tool headless mode may not run: never an answer, and not the model's
// fault.
const SoftDenyMessage = "agy refused to run one of its own tools without asking (headless auto-deny); nothing was answered"

// classify says why a turn did not succeed, nil when it did. The result's
// status decides, never the exit code; its error text says how.
func classify(r *Result, t *Turn, softDenyNotice bool) *backend.Failure {
	softDenied := softDenyNotice || len(r.DeniedActions) > 0
	for _, c := range t.tools {
		softDenied = softDenied || (r.Status == StatusCanceled && c.silent())
	}
	switch {
	case softDenied:
		return &backend.Failure{Kind: backend.FailBackend, Code: "soft_deny", Message: SoftDenyMessage}
	case r.Status == StatusSuccess && r.Usage == (Usage{}) && (t.steps != (Usage{}) || t.text.Len() > 0):
		// Since 1.1.28 a turn past --print-timeout comes back as a success
		// with what was written so far and no usage at all (a finished
		// turn always counts its input): an answer cut short.
		return &backend.Failure{Kind: backend.FailLimit, Message: "the turn ran past agy's print timeout; its answer was cut short"}
	case r.Status == StatusSuccess:
		return nil
	}
	msg := r.Error
	if msg == "" {
		msg = "agy ended the turn with status " + r.Status
	}
	return Classify(msg)
}

// Classify maps one of agy's failure texts (a result's error, an
// AGY_ERROR line) to the backend's terms: an upstream status and error
// type where the text names one, the wait it states.
func Classify(msg string) *backend.Failure {
	f := &backend.Failure{Kind: backend.FailBackend, Message: msg}
	upstream := func(status int, typ string) {
		f.Kind, f.Status, f.Type = backend.FailUpstream, status, typ
	}
	lower := strings.ToLower(msg)
	switch {
	case strings.Contains(lower, "quota reached"):
		upstream(statusTooManyRequests, "rate_limit_error")
		if m := quotaReset.FindStringSubmatch(msg); m != nil {
			if d, err := time.ParseDuration(m[1]); err == nil {
				f.RetryDelay = d
			}
		}
	case strings.Contains(msg, "RESOURCE_EXHAUSTED") || strings.Contains(msg, "Error 429"):
		upstream(statusTooManyRequests, "rate_limit_error")
	case strings.Contains(msg, "MODEL_CAPACITY_EXHAUSTED"):
		upstream(StatusOverloaded, "overloaded_error")
	case strings.Contains(msg, "UNAVAILABLE") || strings.Contains(msg, "Error 503"):
		upstream(statusUnavailable, "api_error")
	case strings.Contains(lower, "authentication failed") || strings.Contains(lower, "api key not valid") ||
		strings.Contains(lower, "sign in"):
		upstream(statusUnauthorized, "authentication_error")
	case strings.Contains(lower, "invalid model selection") || strings.Contains(lower, "not recognized as a known model") ||
		strings.Contains(lower, "requires --effort") || strings.Contains(lower, "effort (available") ||
		strings.Contains(lower, "--effort is not supported"):
		upstream(statusBadRequest, "invalid_request_error")
	case strings.Contains(lower, "timeout waiting for response"):
		f.Kind = backend.FailLimit
		f.Message = "the turn ran past agy's print timeout: " + msg
	}
	return f
}

// AGYErrorPrefix starts the stderr line on which agy (1.2.6 and later)
// reports a model or agent error as JSON.
const AGYErrorPrefix = "AGY_ERROR:"

// ClassifyAGYError reads an AGY_ERROR line. Its JSON fields have never
// been recorded, so it is read leniently: the whole line is classified as
// a failure text is, a message is taken from "message" (or "error", or
// "error"."message") when there is one, and a wait from "retryDelay" or
// "retry_delay" when one parses as a duration (a guess after Google's
// RetryInfo). It returns nil when the line says nothing classifiable.
func ClassifyAGYError(line string) *backend.Failure {
	payload := strings.TrimSpace(strings.TrimPrefix(line, AGYErrorPrefix))
	f := Classify(payload)
	if f.Kind != backend.FailUpstream {
		return nil
	}
	var fields map[string]any
	if json.Unmarshal([]byte(payload), &fields) != nil {
		return f
	}
	f.Message = ""
	switch e := fields["error"].(type) {
	case string:
		f.Message = e
	case map[string]any:
		f.Message, _ = e["message"].(string)
	}
	if m, ok := fields["message"].(string); ok && m != "" {
		f.Message = m
	}
	for _, k := range []string{"retryDelay", "retry_delay"} {
		if s, ok := fields[k].(string); ok {
			if d, err := time.ParseDuration(s); err == nil && d > 0 {
				f.RetryDelay = d
			}
		}
	}
	return f
}
