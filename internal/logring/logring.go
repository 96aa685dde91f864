// Package logring keeps the most recent log lines in memory, so the
// telemetry pages can show what Meridian said lately without reading its
// terminal. It is an io.Writer beside the log's own: whatever the logger
// writes is kept, line by line, up to a fixed count and line length.
package logring

import (
	"bytes"
	"sync"
)

// Defaults: a thousand lines, each cut at 4 KiB.
const (
	DefaultLines  = 1000
	MaxLineBytes  = 4096
	truncatedMark = " …"
)

// Ring is a bounded ring of log lines. The zero value is not usable; use New.
type Ring struct {
	mu      sync.Mutex
	lines   []string
	next    int
	full    bool
	partial []byte
}

// New returns a ring of n lines (n ≤ 0: DefaultLines).
func New(n int) *Ring {
	if n <= 0 {
		n = DefaultLines
	}
	return &Ring{lines: make([]string, n)}
}

// Write implements io.Writer: complete lines enter the ring, a trailing
// partial line waits for its end.
func (r *Ring) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rest := p
	for {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			r.partial = appendBounded(r.partial, rest)
			return len(p), nil
		}
		line := appendBounded(r.partial, rest[:i])
		r.partial = r.partial[:0]
		r.push(string(line))
		rest = rest[i+1:]
	}
}

func appendBounded(dst, b []byte) []byte {
	if room := MaxLineBytes - len(dst); len(b) > room {
		b = b[:max(room, 0)]
	}
	return append(dst, b...)
}

func (r *Ring) push(line string) {
	if len(line) >= MaxLineBytes {
		line += truncatedMark
	}
	r.lines[r.next] = line
	r.next = (r.next + 1) % len(r.lines)
	if r.next == 0 {
		r.full = true
	}
}

// Lines returns the kept lines, oldest first.
func (r *Ring) Lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.full {
		return append([]string(nil), r.lines[:r.next]...)
	}
	return append(append([]string(nil), r.lines[r.next:]...), r.lines[:r.next]...)
}
