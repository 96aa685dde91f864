package codex

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/meridian-gw/meridian/internal/backend"
	"github.com/meridian-gw/meridian/internal/backend/codex/appserver"
	"github.com/meridian-gw/meridian/internal/backend/toolhost"
)

// relay turns one codex turn's notifications into the gateway's events,
// across the responses its pauses for client tools split it into.
type relay struct {
	s          *Session
	turnID     string
	inputBytes int
	emit       func(*backend.Event) error
	ev         *backend.Event
	next       int // the current response's next block index
	text       int // its open text block, -1 when none
	textItem   string

	// texts are the agent messages whose deltas were relayed; answer is
	// the turn's text, last its last message (a structured answer).
	texts  map[string]bool
	answer strings.Builder
	last   string

	usage   tokens // the thread's totals as last reported
	resets  time.Time
	done    bool
	status  string
	failure *turnError

	// Client tool calls are matched from two sides: the mcpToolCall item
	// that shows the model's call, and the tools/call codex then sends.
	announced []string // tool names, in order
	arrived   []*toolhost.Call
	late      <-chan time.Time
}

// notification is the part of every turn notification read here.
type notification struct {
	TurnID string          `json:"turnId"`
	ItemID string          `json:"itemId"`
	Delta  string          `json:"delta"`
	Item   json.RawMessage `json:"item"`
	Turn   struct {
		ID     string     `json:"id"`
		Status string     `json:"status"`
		Error  *turnError `json:"error"`
	} `json:"turn"`
	TokenUsage *struct {
		Total tokens `json:"total"`
	} `json:"tokenUsage"`
	Error     *turnError `json:"error"`
	WillRetry bool       `json:"willRetry"`
}

// item is the part of a thread item read here.
type item struct {
	Type   string `json:"type"`
	ID     string `json:"id"`
	Text   string `json:"text"`
	Server string `json:"server"`
	Tool   string `json:"tool"`
}

// take handles one notification. Those of other turns, and kinds not
// read here, are skipped: codex adds kinds between versions.
func (r *relay) take(m appserver.Message) error {
	var n notification
	if err := json.Unmarshal(m.Params, &n); err != nil {
		r.s.d.log.Warn("codex sent a notification that is not readable; ignoring it", "method", m.Method, "err", err)
		return nil
	}
	switch m.Method {
	case "account/rateLimits/updated":
		var rl rateLimits
		if json.Unmarshal(m.Params, &rl) == nil {
			if ev := rl.event(); ev != nil {
				r.resets = ev.ResetsAt
				*r.ev = *ev
				return r.emit(r.ev)
			}
		}
		return nil
	case "turn/completed":
		if n.Turn.ID == r.turnID {
			r.done, r.status = true, n.Turn.Status
			if n.Turn.Error != nil {
				r.failure = n.Turn.Error
			}
		}
		return nil
	}
	if n.TurnID != r.turnID {
		return nil
	}
	switch m.Method {
	case "item/agentMessage/delta":
		r.texts[n.ItemID] = true
		return r.textDelta(n.ItemID, n.Delta)
	case "item/started", "item/completed":
		var it item
		if json.Unmarshal(n.Item, &it) != nil {
			return nil
		}
		return r.itemEvent(m.Method == "item/started", it)
	case "thread/tokenUsage/updated":
		if n.TokenUsage != nil {
			r.usage = n.TokenUsage.Total
		}
	case "error":
		if n.Error == nil {
			return nil
		}
		if n.WillRetry {
			_, status := n.Error.status()
			*r.ev = backend.Event{Kind: backend.Retry, Status: cmpStatus(status)}
			return r.emit(r.ev)
		}
		r.failure = n.Error
	}
	return nil
}

func cmpStatus(s int) int {
	if s == 0 {
		return http.StatusBadGateway
	}
	return s
}

// itemEvent handles an item's start or completion.
func (r *relay) itemEvent(started bool, it item) error {
	switch it.Type {
	case "agentMessage":
		if started {
			return nil
		}
		if !r.texts[it.ID] && it.Text != "" && len(r.s.opts.JSONSchema) == 0 {
			// A message that came whole, without deltas.
			if err := r.textDelta(it.ID, it.Text); err != nil {
				return err
			}
		}
		if r.answer.Len() > 0 && it.Text != "" {
			r.answer.WriteString("\n\n")
		}
		r.answer.WriteString(it.Text)
		r.last = it.Text
	case "mcpToolCall":
		if started && it.Server == serverName {
			r.announced = append(r.announced, it.Tool)
			return r.match()
		}
	case "userMessage", "reasoning":
	default:
		if started {
			r.s.d.log.Info("codex began an action of its own in a gateway session; its approval, if asked, is declined", "type", it.Type, "thread", r.s.thread)
		}
	}
	return nil
}

// textDelta relays a piece of an agent message as a text block's delta;
// a new message opens a new block. Under an output schema the text is
// the structured answer, sent by the gateway once it is complete.
func (r *relay) textDelta(itemID, delta string) error {
	if len(r.s.opts.JSONSchema) > 0 || delta == "" {
		return nil
	}
	if r.text >= 0 && r.textItem != itemID {
		*r.ev = backend.Event{Kind: backend.BlockStop, Index: r.text}
		if err := r.emit(r.ev); err != nil {
			return err
		}
		r.text = -1
	}
	if r.text < 0 {
		r.text, r.next, r.textItem = r.next, r.next+1, itemID
		if err := backend.EmitTextStart(r.emit, r.ev, r.text); err != nil {
			return err
		}
	}
	return backend.EmitText(r.emit, r.ev, r.text, delta)
}

// match hands out the calls whose item was read, once every announced
// call arrived (a parallel batch goes out whole).
func (r *relay) match() error {
	var ready []*toolhost.Call
	for i := 0; i < len(r.arrived); {
		c := r.arrived[i]
		j := -1
		for k, name := range r.announced {
			if name == c.Name {
				j = k
				break
			}
		}
		if j < 0 {
			i++
			continue
		}
		r.announced = append(r.announced[:j], r.announced[j+1:]...)
		r.arrived = append(r.arrived[:i], r.arrived[i+1:]...)
		ready = append(ready, c)
	}
	if len(ready) > 0 {
		if len(r.announced) > 0 {
			// Siblings still on their way: wait for them, briefly.
			r.arrived = append(ready, r.arrived...)
			ready = nil
		} else if err := r.handOut(ready...); err != nil {
			return err
		}
	}
	switch {
	case len(r.arrived) == 0:
		r.late = nil
	case r.late == nil:
		r.late = time.After(lateArrival)
	}
	return nil
}

// handOut gives calls to the client as tool_use blocks and ends the
// response for them.
func (r *relay) handOut(calls ...*toolhost.Call) error {
	if len(calls) == 0 {
		return nil
	}
	r.announced = nil
	if r.text >= 0 {
		*r.ev = backend.Event{Kind: backend.BlockStop, Index: r.text}
		if err := r.emit(r.ev); err != nil {
			return err
		}
		r.text = -1
	}
	for _, c := range calls {
		id, err := r.s.calls.Hand("toolu_codex_", c)
		if err != nil {
			return err
		}
		if err := backend.EmitToolUse(r.emit, r.ev, r.next, id, r.s.tools.ClientName(c.Name), c.Args); err != nil {
			return err
		}
		r.next++
	}
	used := r.usage.since(r.s.prev)
	*r.ev = backend.Event{Kind: backend.MessageDelta, StopReason: "tool_use", Usage: used}
	err := r.emit(r.ev)
	if errors.Is(err, backend.ErrPause) {
		r.s.prev = r.usage
		return errPaused
	}
	return err
}
