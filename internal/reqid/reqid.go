// Package reqid names each request the gateway serves: an id made where
// the request enters (or the one it came with, when that one is safe to
// log: a client's own, or the host that forwarded it), carried in its
// context, stamped on every line logged with that context, and sent back
// in the answer's headers, so one answer's log lines can be found.
package reqid

import (
	"context"
	"crypto/rand"
	"log/slog"
	"regexp"
)

// Header is where the id travels, in and out; Anthropic's clients read
// it as request-id, OpenAI's as x-request-id, so answers carry both.
const (
	Header          = "X-Request-Id"
	AnthropicHeader = "Request-Id"
)

// safe is what an id brought by a request may be: short, and nothing a
// log line or a header could be bent by.
var safe = regexp.MustCompile(`^[A-Za-z0-9_.:-]{8,80}$`)

// New is a fresh id.
func New() string { return "req_" + rand.Text() }

// Take is the id a request brought, if it is safe to keep, else a new one.
func Take(brought string) string {
	if safe.MatchString(brought) {
		return brought
	}
	return New()
}

type key struct{}

// With is ctx carrying id.
func With(ctx context.Context, id string) context.Context { return context.WithValue(ctx, key{}, id) }

// From is the id ctx carries, "" for none.
func From(ctx context.Context) string {
	id, _ := ctx.Value(key{}).(string)
	return id
}

// Handler adds the request's id to each record logged with its context.
type Handler struct{ slog.Handler }

// Handle implements slog.Handler.
func (h Handler) Handle(ctx context.Context, r slog.Record) error {
	if id := From(ctx); id != "" {
		r.AddAttrs(slog.String("request_id", id))
	}
	return h.Handler.Handle(ctx, r)
}

// WithAttrs implements slog.Handler.
func (h Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return Handler{h.Handler.WithAttrs(attrs)}
}

// WithGroup implements slog.Handler.
func (h Handler) WithGroup(name string) slog.Handler { return Handler{h.Handler.WithGroup(name)} }
