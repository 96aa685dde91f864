// Package termlog writes log records for a person at a terminal: the
// time of day, the level and the message first, then the attributes as
// key=value. Services keep the machine formats (logfmt, JSON).
package termlog

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"sync"
)

// Handler is a slog.Handler for a terminal.
type Handler struct {
	out *output
	// attrs formats everything but time, level and message into out.buf,
	// with the attributes and groups this handler was given.
	attrs slog.Handler
}

// output is what every handler derived from one New shares.
type output struct {
	mu  sync.Mutex
	w   io.Writer
	buf bytes.Buffer
}

// New returns a handler writing to w at the level opts asks for.
func New(w io.Writer, opts *slog.HandlerOptions) *Handler {
	out := &output{w: w}
	inner := slog.HandlerOptions{}
	if opts != nil {
		inner = *opts
	}
	replace := inner.ReplaceAttr
	inner.ReplaceAttr = func(groups []string, a slog.Attr) slog.Attr {
		if len(groups) == 0 && (a.Key == slog.TimeKey || a.Key == slog.LevelKey || a.Key == slog.MessageKey) {
			return slog.Attr{}
		}
		if replace != nil {
			return replace(groups, a)
		}
		return a
	}
	return &Handler{out: out, attrs: slog.NewTextHandler(&out.buf, &inner)}
}

// Enabled reports whether the level is logged.
func (h *Handler) Enabled(ctx context.Context, l slog.Level) bool { return h.attrs.Enabled(ctx, l) }

// Handle writes one line: "15:04:05 WARN  message  key=value …".
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	h.out.mu.Lock()
	defer h.out.mu.Unlock()
	h.out.buf.Reset()
	if err := h.attrs.Handle(ctx, r); err != nil {
		return err
	}
	attrs := bytes.TrimRight(h.out.buf.Bytes(), "\n")
	var line bytes.Buffer
	if !r.Time.IsZero() {
		line.WriteString(r.Time.Format("15:04:05 "))
	}
	level := r.Level.String()
	line.WriteString(level)
	line.Write(bytes.Repeat([]byte(" "), max(1, 6-len(level))))
	line.WriteString(r.Message)
	if len(attrs) > 0 {
		line.WriteString("  ")
		line.Write(attrs)
	}
	line.WriteByte('\n')
	_, err := h.out.w.Write(line.Bytes())
	return err
}

// WithAttrs returns a handler that adds attrs to every record.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &Handler{out: h.out, attrs: h.attrs.WithAttrs(attrs)}
}

// WithGroup returns a handler that puts later attributes in a group.
func (h *Handler) WithGroup(name string) slog.Handler {
	return &Handler{out: h.out, attrs: h.attrs.WithGroup(name)}
}
