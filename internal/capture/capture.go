// Package capture gathers what a request carried, for the request
// inspector: with --capture metadata its record and headers, with content
// also the body the client sent, what the CLI was written and the answer
// as it went back. Secrets are redacted before anything is kept. This
// package is the pure part: the draft one request fills while it runs,
// and the redaction; the inspector package keeps and reads captures.
package capture

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/meridian-gw/meridian/internal/telemetry"
)

// Modes of capture.
const (
	Off      = "off"
	Metadata = "metadata"
	Content  = "content"
)

// CheckMode refuses a mode that is not one of the three ("" is allowed
// where it means "as the server says").
func CheckMode(m string, blank bool) error {
	switch m {
	case Off, Metadata, Content:
		return nil
	case "":
		if blank {
			return nil
		}
	}
	return fmt.Errorf("--capture %q: want off, metadata or content", m)
}

// MaxPart bounds each captured body (the request, what the CLI was
// written, the answer); beyond it a part is cut and marked so.
const MaxPart = 1 << 20

// Draft is one request's capture while it runs. Its methods are safe on
// a nil Draft and from several goroutines.
type Draft struct {
	mu      sync.Mutex
	mode    string
	headers http.Header
	request []byte
	written [][]byte
	answer  bytes.Buffer
	// answered counts the answer's bytes, kept or not; cut names the
	// parts cut at MaxPart.
	answered int64
	cut      []string
}

// NewDraft starts a request's capture in mode, with its headers.
func NewDraft(mode string, h http.Header) *Draft {
	return &Draft{mode: mode, headers: h.Clone()}
}

type draftKey struct{}

// With returns ctx carrying d.
func With(ctx context.Context, d *Draft) context.Context {
	return context.WithValue(ctx, draftKey{}, d)
}

// From returns the draft ctx carries, or nil.
func From(ctx context.Context) *Draft {
	d, _ := ctx.Value(draftKey{}).(*Draft)
	return d
}

// SetMode changes the mode (a key's own capture setting) before the body
// is read.
func (d *Draft) SetMode(m string) {
	if d == nil || m == "" {
		return
	}
	d.mu.Lock()
	d.mode = m
	d.mu.Unlock()
}

// Mode is the draft's mode; Off for a nil draft.
func (d *Draft) Mode() string {
	if d == nil {
		return Off
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.mode
}

func (d *Draft) content() bool { return d != nil && d.Mode() == Content }

// Request keeps the body as the client sent it (not copied: the caller
// does not change it).
func (d *Draft) Request(body []byte) {
	if !d.content() {
		return
	}
	d.mu.Lock()
	d.request = body
	d.mu.Unlock()
}

// Wrote keeps what a turn gave the CLI, as JSON.
func (d *Draft) Wrote(v any) {
	if !d.content() {
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"unencodable": err.Error()})
	}
	d.mu.Lock()
	d.written = append(d.written, b)
	d.mu.Unlock()
}

// Answer keeps the bytes of the answer as they are written, up to
// MaxPart.
func (d *Draft) Answer(p []byte) {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.answered += int64(len(p))
	if d.mode != Content {
		return
	}
	room := MaxPart - d.answer.Len()
	if len(p) > room {
		p = p[:max(room, 0)]
		if !slices.Contains(d.cut, "answer") {
			d.cut = append(d.cut, "answer")
		}
	}
	d.answer.Write(p)
}

// Capture is a finished request as it is kept: its record, its headers,
// and in content mode its parts, all redacted.
type Capture struct {
	Mode   string           `json:"mode"`
	Record telemetry.Record `json:"record"`
	// Headers are the request's headers, one value each, secrets
	// redacted.
	Headers map[string]string `json:"headers"`
	// RequestBytes and AnswerBytes are the sizes as they were, kept or
	// not; Cut names the parts cut at MaxPart.
	RequestBytes int64    `json:"request_bytes"`
	AnswerBytes  int64    `json:"answer_bytes"`
	Cut          []string `json:"cut,omitempty"`
	// Request, Written and Answer are the parts (content mode only).
	Request json.RawMessage   `json:"request,omitempty"`
	Written []json.RawMessage `json:"written,omitempty"`
	Answer  string            `json:"answer,omitempty"`
}

// Finish closes the draft with the request's record and returns what is
// kept, redacted by r; ok is false when the mode keeps nothing.
func (d *Draft) Finish(rec telemetry.Record, r *Redactor) (c Capture, ok bool) {
	if d == nil {
		return c, false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.mode != Metadata && d.mode != Content {
		return c, false
	}
	c = Capture{Mode: d.mode, Record: rec, Headers: headers(d.headers, r), RequestBytes: int64(len(d.request)),
		AnswerBytes: d.answered, Cut: slices.Clone(d.cut)}
	if d.mode != Content {
		c.RequestBytes = 0 // not read: the body was never kept
		return c, true
	}
	req := d.request
	if len(req) > MaxPart {
		req, c.Cut = req[:MaxPart], append(c.Cut, "request")
	}
	if red := r.Redact(req); json.Valid(red) {
		c.Request = red
	} else {
		c.Request, _ = json.Marshal(string(red)) // a cut body is kept as text
	}
	written := 0
	for _, w := range d.written {
		if written += len(w); written > MaxPart {
			c.Cut = append(c.Cut, "written")
			break
		}
		c.Written = append(c.Written, r.Redact(w))
	}
	c.Answer = string(r.Redact(d.answer.Bytes()))
	return c, true
}

// secretHeaders carry credentials: their values are never kept.
func secretHeader(name string) bool {
	switch strings.ToLower(name) {
	case "authorization", "x-api-key", "proxy-authorization", "cookie", "x-meridian-cluster-key":
		return true
	}
	return false
}

// headers are h one value a name, credentials replaced and the rest
// redacted.
func headers(h http.Header, r *Redactor) map[string]string {
	out := make(map[string]string, len(h))
	for name, vs := range h {
		v := strings.Join(vs, ", ")
		if secretHeader(name) {
			v = Redacted
		} else {
			v = string(r.Redact([]byte(v)))
		}
		out[name] = v
	}
	return out
}
