// Package telemetry describes what Meridian records about each request and
// computes the figures its pages and JSON show from those records. It does
// no I/O: the history package stores records, httpapi serves the figures.
// No record holds message content: a conversation is a short hash of its
// key, and the rest is counts, names and times.
package telemetry

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sync"
	"time"
)

// APIs a request may arrive through.
const (
	APIMessages  = "messages"
	APIChat      = "chat"
	APIResponses = "responses"
)

// Tokens are a request's token counts by kind.
type Tokens struct {
	Input      int64 `json:"input"`
	Output     int64 `json:"output"`
	CacheRead  int64 `json:"cache_read"`
	CacheWrite int64 `json:"cache_write"`
}

// Add sums two counts.
func (t Tokens) Add(o Tokens) Tokens {
	return Tokens{t.Input + o.Input, t.Output + o.Output, t.CacheRead + o.CacheRead, t.CacheWrite + o.CacheWrite}
}

// Record is one request as Meridian saw it.
type Record struct {
	ID   int64     `json:"id,omitempty"` // assigned by the history
	Time time.Time `json:"time"`         // when the request arrived
	// Host is the meridian that served it (its host id), set by the
	// history.
	Host string `json:"host,omitempty"`
	API  string `json:"api"`
	// Client is the adapter that recognised the client (claude-code,
	// opencode, generic, …); empty for requests that never got that far.
	Client string `json:"client,omitempty"`
	// Conversation is a short hash of the conversation key, never the key.
	Conversation string `json:"conversation,omitempty"`
	Profile      string `json:"profile,omitempty"`
	// Route is why the profile was chosen: "headroom five_hour 31%",
	// "sticky", "moved: seven_day 96%", "named", …
	Route string `json:"route,omitempty"`
	// Key names the API key the request came with (its name, never the
	// key); empty for the admin key or an open gateway.
	Key string `json:"key,omitempty"`
	// Model is what the client asked for; Effective what answered.
	Model     string `json:"model,omitempty"`
	Effective string `json:"effective_model,omitempty"`
	// Verdict is how the turn related to what its conversation held: new,
	// continuation, compaction, undo, diverged, replayed; empty for requests
	// without a conversation.
	Verdict string `json:"verdict,omitempty"`
	// Live says the turn ran on the conversation's live process.
	Live bool `json:"live"`
	// Replay says the answer came from a saved answer, nothing ran.
	Replay    bool          `json:"replay"`
	Stream    bool          `json:"stream"`
	QueueWait time.Duration `json:"queue_wait_ns"`
	// TTFT is the time to the first content the client received (0: none).
	TTFT   time.Duration `json:"ttft_ns"`
	Total  time.Duration `json:"total_ns"`
	Tokens Tokens        `json:"tokens"`
	// Cost is the API-equivalent list price of the tokens in US dollars:
	// an estimate, and -1 when no price is known for the model.
	Cost      float64 `json:"cost_usd"`
	Status    int     `json:"status"`
	ErrorType string  `json:"error_type,omitempty"`
	// ErrorMessage is the error's text as the client got it (already free
	// of paths and secrets), cut to maxErrorMessage runes.
	ErrorMessage string `json:"error_message,omitempty"`
}

// maxErrorMessage bounds the error text a record keeps: enough to say
// what went wrong, never a whole upstream body.
const maxErrorMessage = 300

// ClientError says whether a status is the client's to fix (a bad
// request, a key refused, a model not found, a client that left) rather
// than a failure of the gateway or the upstream. 429 is the upstream's
// or a key's limit: not a mistake in the request.
func ClientError(status int) bool {
	return status >= 400 && status < 500 && status != 429
}

// Failed says whether a record is any error: a status of 400 or more, or
// none at all.
func Failed(r Record) bool { return r.Status >= 400 || r.Status == 0 }

// ConversationHash shortens a conversation key to a stable label that does
// not reveal it.
func ConversationHash(profile, key string) string {
	if key == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(profile + "\x00" + key))
	return hex.EncodeToString(sum[:6])
}

// Trace gathers one request's record while it runs: the HTTP layer opens
// it, the gateway adds what it decides, and the output notes the first
// byte. Its methods are safe on a nil Trace, so code that runs without
// telemetry need not check.
type Trace struct {
	mu    sync.Mutex
	rec   Record
	start time.Time
	// failed is the status of an error answered inside a stream that had
	// already begun with 200.
	failed int
	// handedOff: the work outlives the request (a background response),
	// and whoever runs it finishes the record.
	handedOff bool
	// delivered: the whole answer was written to the connection.
	delivered bool
}

// NewTrace opens a trace for a request that arrived at start.
func NewTrace(api string, start time.Time) *Trace {
	return &Trace{rec: Record{API: api, Time: start}, start: start}
}

type traceKey struct{}

// With returns ctx carrying tr.
func With(ctx context.Context, tr *Trace) context.Context {
	return context.WithValue(ctx, traceKey{}, tr)
}

// From returns the trace ctx carries, or nil.
func From(ctx context.Context) *Trace {
	tr, _ := ctx.Value(traceKey{}).(*Trace)
	return tr
}

func (tr *Trace) update(f func(*Record)) {
	if tr == nil {
		return
	}
	tr.mu.Lock()
	f(&tr.rec)
	tr.mu.Unlock()
}

// Request notes what the client asked for.
func (tr *Trace) Request(model string, stream bool) {
	tr.update(func(r *Record) { r.Model, r.Stream = model, stream })
}

// Conversation notes the client adapter and the conversation.
func (tr *Trace) Conversation(client, profile, key string) {
	tr.update(func(r *Record) {
		r.Client, r.Profile, r.Conversation = client, profile, ConversationHash(profile, key)
	})
}

// Verdict notes lineage's verdict and whether the live process served.
func (tr *Trace) Verdict(verdict string, live bool) {
	tr.update(func(r *Record) { r.Verdict, r.Live = verdict, live })
}

// Routed notes why the request's profile was chosen.
func (tr *Trace) Routed(reason string) {
	tr.update(func(r *Record) { r.Route = reason })
}

// Keyed notes the name of the API key the request came with.
func (tr *Trace) Keyed(name string) {
	tr.update(func(r *Record) { r.Key = name })
}

// Usage is the model that answered (else the one asked for) and the
// tokens noted so far: what a key's day and budget count.
func (tr *Trace) Usage() (model string, t Tokens) {
	if tr == nil {
		return "", t
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return cmp.Or(tr.rec.Effective, tr.rec.Model), tr.rec.Tokens
}

// DayTokens is what a key's daily token limit counts of t: input (cache
// writes included, cache reads not) and output.
func (t Tokens) DayTokens() int64 { return t.Input + t.CacheWrite + t.Output }

// Queued adds time spent waiting for admission.
func (tr *Trace) Queued(d time.Duration) {
	tr.update(func(r *Record) { r.QueueWait += d })
}

// Answered notes the model that answered and the tokens the turn used.
func (tr *Trace) Answered(effective string, t Tokens) {
	tr.update(func(r *Record) {
		if effective != "" {
			r.Effective = effective
		}
		r.Tokens = r.Tokens.Add(t)
	})
}

// HandOff says the request's work goes on after its response (a
// background response): the trace is finished when that work ends, not
// with the request.
func (tr *Trace) HandOff() { tr.update(func(*Record) { tr.handedOff = true }) }

// HandedOff reports whether HandOff was called.
func (tr *Trace) HandedOff() bool {
	if tr == nil {
		return false
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.handedOff
}

// Delivered notes that the whole answer was written to the client's
// connection: a client that hangs up after that was answered.
func (tr *Trace) Delivered() { tr.update(func(*Record) { tr.delivered = true }) }

// IsDelivered reports whether Delivered was called.
func (tr *Trace) IsDelivered() bool {
	if tr == nil {
		return false
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.delivered
}

// Replayed notes an answer served from a saved one.
func (tr *Trace) Replayed() { tr.update(func(r *Record) { r.Replay = true }) }

// FirstByte notes the first content sent to the client; later calls are
// ignored.
func (tr *Trace) FirstByte(at time.Time) {
	tr.update(func(r *Record) {
		if r.TTFT == 0 {
			r.TTFT = max(at.Sub(tr.start), 1)
		}
	})
}

// Failed notes the error a request was answered with: its status, type
// and message. An error inside a stream that began with 200 counts as its
// status.
func (tr *Trace) Failed(status int, errorType, message string) {
	if rs := []rune(message); len(rs) > maxErrorMessage {
		message = string(rs[:maxErrorMessage-1]) + "…"
	}
	tr.update(func(r *Record) { tr.failed, r.ErrorType, r.ErrorMessage = status, errorType, message })
}

// Finish closes the record with the response's status and error type at
// end and returns it.
func (tr *Trace) Finish(status int, errorType string, end time.Time) Record {
	if tr == nil {
		return Record{}
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.failed != 0 {
		status = tr.failed
	}
	if errorType != "" {
		tr.rec.ErrorType = errorType
	}
	tr.rec.Status, tr.rec.Total = status, end.Sub(tr.start)
	return tr.rec
}
