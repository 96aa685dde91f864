package toolhost

import (
	"fmt"
	"sync"

	"github.com/meridian-gw/meridian/internal/backend"
)

// Held are the calls a session handed its client, by tool_use id, until
// their results come. Safe for concurrent use.
type Held struct {
	mu    sync.Mutex
	calls map[string]*Call
}

// Hand gives c a new tool_use id (prefix and random hex) and holds it.
func (h *Held) Hand(prefix string, c *Call) (string, error) {
	id, err := RandomHex(12)
	if err != nil {
		return "", err
	}
	id = prefix + id
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.calls == nil {
		h.calls = map[string]*Call{}
	}
	h.calls[id] = c
	return id, nil
}

// Answer gives the held call r answers its result, once.
func (h *Held) Answer(r backend.ToolResult) error {
	h.mu.Lock()
	c := h.calls[r.ToolUseID]
	delete(h.calls, r.ToolUseID)
	h.mu.Unlock()
	if c == nil {
		return fmt.Errorf("no tool call %s waits for a result", r.ToolUseID)
	}
	c.Answer(r)
	return nil
}

// Any reports whether a call is held.
func (h *Held) Any() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.calls) > 0
}

// Release forgets every held call and returns them.
func (h *Held) Release() []*Call {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]*Call, 0, len(h.calls))
	for _, c := range h.calls {
		out = append(out, c)
	}
	h.calls = nil
	return out
}
