package codexschema

import (
	"encoding/json"
	"fmt"
	"sync"
)

// Trace checks every line of a conversation with codex against the
// protocol as it crosses (an appserver trace): what the client wrote as
// its requests and notifications ("out"), what codex wrote as its
// notifications and requests ("in"). Responses are checked by their
// callers' decoding. Safe for concurrent use.
type Trace struct {
	proto *Protocol
	mu    sync.Mutex
	bad   []string
	seen  map[string]int
}

// NewTrace checks lines against p.
func NewTrace(p *Protocol) *Trace { return &Trace{proto: p, seen: map[string]int{}} }

// Line checks one line going dir ("in" or "out").
func (t *Trace) Line(dir string, line []byte) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	_ = json.Unmarshal(line, &m)
	var kind Kind
	switch {
	case m.Method == "":
		return
	case dir == "out" && len(m.ID) > 0:
		kind = ClientRequest
	case dir == "out":
		kind = ClientNotification
	case len(m.ID) > 0:
		kind = ServerRequest
	default:
		kind = ServerNotification
	}
	err := t.proto.Check(kind, line)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.seen[m.Method]++
	if err != nil {
		t.bad = append(t.bad, fmt.Sprintf("%s %s: %v", dir, m.Method, err))
	}
}

// Problems are the lines off the protocol so far, each with why.
func (t *Trace) Problems() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.bad...)
}

// Seen is how many messages of method crossed.
func (t *Trace) Seen(method string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.seen[method]
}
