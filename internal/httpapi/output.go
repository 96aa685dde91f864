package httpapi

import (
	"encoding/json"

	"github.com/meridian-gw/meridian/internal/gateway"
)

// Every way a response is rendered is a gateway output.
var (
	_ gateway.Output       = (*collected)(nil)
	_ gateway.Output       = (*sseWriter)(nil)
	_ gateway.SessionNamer = (*sseWriter)(nil)
	_ gateway.Output       = (*logOutput)(nil)
	_ gateway.Committer    = (*logOutput)(nil)
	_ gateway.Committer    = (*collected)(nil)
	_ gateway.Committer    = (*sseWriter)(nil)
	_ sseEncoder           = (*messagesSSE)(nil)
	_ sseEncoder           = (*chatSSE)(nil)
	_ sseEncoder           = (*responsesSSE)(nil)
)

// collected receives a response that is answered as one JSON body: the
// gateway hands over the whole answer when it finishes, and the handler
// renders it in its protocol. It implements gateway.Output.
type collected struct {
	start   gateway.Start
	finish  gateway.Finish
	session string
	began   bool
}

// Committed: nothing reaches the client before the whole answer, but a turn
// that began may have spent; failover retries only one that did not.
func (o *collected) Committed() bool { return o.began }

func (o *collected) Start(st gateway.Start) error {
	o.began = true
	o.start = st
	o.session = st.SessionID
	return nil
}

func (o *collected) BlockStart(int, json.RawMessage) error { return nil }
func (o *collected) BlockDelta(int, json.RawMessage) error { return nil }
func (o *collected) BlockStop(int) error                   { return nil }
func (o *collected) Flush() error                          { return nil }
func (o *collected) Abandon(int)                           {}

func (o *collected) Finish(f gateway.Finish) error {
	o.finish = f
	if f.SessionID != "" {
		o.session = f.SessionID
	}
	return nil
}
