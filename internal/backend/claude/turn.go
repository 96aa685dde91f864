package claude

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/meridian-gw/meridian/internal/backend"
)

// errBusy reports a second concurrent turn on one process.
var errBusy = errors.New("claude: a turn is already running on this process")

// Turn implements backend.Session. It writes the user message without
// waiting for the CLI's init (the CLI prints nothing before it has input),
// then relays the turn's output until the result line. On a paused
// process it continues the paused turn: steering goes in first, so the
// model reads it beside the results, then the results are answered.
func (p *Process) Turn(ctx context.Context, in backend.Input, emit func(*backend.Event) error) (*backend.Result, error) {
	p.mu.Lock()
	if p.broken != nil {
		err := p.broken
		p.mu.Unlock()
		return nil, err
	}
	if p.inTurn {
		p.mu.Unlock()
		return nil, errBusy
	}
	if p.unbound {
		p.mu.Unlock()
		return nil, errors.New("claude: a spare takes no turn before it is bound")
	}
	p.inTurn = true
	paused, t := p.paused, p.cur
	p.paused, p.cur = false, nil
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.inTurn = false
		p.mu.Unlock()
	}()

	if err := ctx.Err(); err != nil {
		p.markBroken(err) // a paused turn left unanswered cannot go on
		return nil, err
	}
	written := 0
	if len(in.Content) > 0 || !paused {
		n, err := p.writeUser(ctx, in.Content)
		if err != nil {
			p.markBroken(err)
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return p.crashResult(), nil
		}
		written = n
	}
	if paused {
		t.emit, t.searches = emit, 0
	} else {
		t = newTranslator(emit, p.toolset())
		t.search = p.search != nil
	}
	p.mu.Lock()
	p.awaiting, p.heldAt, p.searches = map[string]bool{}, "", 0
	for _, r := range in.Results {
		p.awaiting[r.ToolUseID] = true
	}
	p.mu.Unlock()
	for _, r := range in.Results {
		if err := p.Answer(r); err != nil {
			p.markBroken(err)
			return p.crashResult(), nil
		}
		written += resultSize(r)
	}
	return p.relay(ctx, t, written)
}

// relay reads the turn's output until its result, a pause, or the end of
// the caller's interest.
func (p *Process) relay(ctx context.Context, t *translator, written int) (*backend.Result, error) {
	flush := backend.Event{Kind: backend.Flush}
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				p.markBroken(errors.New("claude exited"))
				return p.crashResult(), nil
			}
			if l.Type == "system" && l.Subtype == "init" {
				p.setSessionID(l.SessionID)
			}
			if l.Type == "user" {
				p.took(l)
			}
			if !knownKind(l.Type) {
				p.log.Debug("claude wrote a line of an unknown kind; ignoring it", "type", l.Type, "subtype", l.Subtype)
			}
			res, err := t.handle(l)
			if errors.Is(err, backend.ErrPause) {
				// The model called client tools: the CLI waits for their
				// results inside the turn, and so does this process.
				p.mu.Lock()
				p.paused, p.cur = true, t
				p.mu.Unlock()
				return &backend.Result{SessionID: p.ID(), Paused: true, InputBytes: written, WebSearches: t.searches}, nil
			}
			if err != nil {
				if l.Type != "result" { // a turn that has ended needs no interrupt
					p.log.Debug("turn output refused; interrupting", "err", err)
					p.settle()
				}
				return nil, err
			}
			if res != nil {
				p.clearCalls()
				p.setSessionID(res.SessionID)
				res.InputBytes = written
				return res, nil
			}
			if !l.more && len(p.lines) == 0 {
				if err := t.emit(&flush); err != nil {
					p.settle()
					return nil, err
				}
			}
		case <-ctx.Done():
			p.settle()
			return nil, ctx.Err()
		}
	}
}

// took notes a user line of the CLI's: when it carries the last of the
// tool results this turn delivered, the session holds them from that
// message on.
func (p *Process) took(l *line) {
	if l.ParentToolUseID != nil && *l.ParentToolUseID != "" || l.UUID == "" {
		return
	}
	var msg struct {
		Content []struct {
			Type      string `json:"type"`
			ToolUseID string `json:"tool_use_id"`
		} `json:"content"`
	}
	if json.Unmarshal(l.Message, &msg) != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.awaiting) == 0 {
		return
	}
	for _, b := range msg.Content {
		if b.Type == "tool_result" {
			delete(p.awaiting, b.ToolUseID)
		}
	}
	if len(p.awaiting) == 0 {
		p.heldAt = l.UUID
	}
}

// HeldAt implements backend.ResultHolder: the message at which the session
// holds the tool results its latest turn delivered, "" before the CLI
// has taken them all.
func (p *Process) HeldAt() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.heldAt
}

// resultSize is what a tool result adds to the bytes written to the CLI.
func resultSize(r backend.ToolResult) int {
	n := len(r.ToolUseID)
	for _, c := range r.Content {
		n += len(c)
	}
	return n
}

// knownKind reports whether the driver knows a stdout line type. The CLI
// adds kinds often; unknown ones are logged and skipped, never fatal.
func knownKind(t string) bool {
	switch t {
	case "stream_event", "assistant", "user", "result", "system", "rate_limit_event",
		"command_lifecycle": // a rewind's (Recycle), between turns
		return true
	}
	return false
}

// writeUser sends the user message. A cancelled context aborts a write the
// CLI is not reading, by closing stdin.
func (p *Process) writeUser(ctx context.Context, content []json.RawMessage) (int, error) {
	id := newSessionID()
	p.mu.Lock()
	if p.fresh && p.root == "" {
		p.root = id
	}
	p.last = id
	p.mu.Unlock()
	return p.writeLine(ctx, userLine{
		Type:    "user",
		UUID:    id,
		Message: userMessage{Role: "user", Content: guardSlashCommand(content)},
	})
}

// settle interrupts the running turn and waits, up to InterruptGrace, for
// its result line, so the process is left between turns. If the result does
// not come the process is marked broken and must be closed.
func (p *Process) settle() {
	if err := p.interrupt(); err != nil {
		p.markBroken(fmt.Errorf("interrupt: %w", err))
		return
	}
	deadline := time.NewTimer(p.d.cfg.InterruptGrace)
	defer deadline.Stop()
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				p.markBroken(errors.New("claude exited during interrupt"))
				return
			}
			if l.Type == "result" {
				p.setSessionID(l.SessionID)
				return
			}
		case <-deadline.C:
			p.markBroken(errors.New("claude did not end an interrupted turn in time"))
			return
		}
	}
}

func (p *Process) markBroken(err error) {
	p.mu.Lock()
	if p.broken == nil {
		p.broken = err
	}
	p.mu.Unlock()
}

// crashResult reports a process that went away mid-turn.
func (p *Process) crashResult() *backend.Result {
	return &backend.Result{
		SessionID: p.ID(),
		Failure:   &backend.Failure{Kind: backend.FailBackend, Message: p.exitError()},
	}
}

// guardSlashCommand keeps the CLI from taking a user message for one of its
// own commands. The CLI checks whether the last text block starts with "/"
// and names a command it knows ("/compact"), and then answers it itself.
// Splitting the leading slash into its own block leaves the text the model
// sees unchanged while the last block no longer starts with "/".
func guardSlashCommand(content []json.RawMessage) []json.RawMessage {
	if len(content) == 0 {
		return content
	}
	last := content[len(content)-1]
	var b struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(last, &b) != nil || b.Type != "text" {
		return content
	}
	trimmed := strings.TrimLeft(b.Text, " \t\r\n")
	if !strings.HasPrefix(trimmed, "/") || len(trimmed) == 1 {
		return content
	}
	cut := len(b.Text) - len(trimmed) + 1
	out := make([]json.RawMessage, 0, len(content)+1)
	out = append(out, content[:len(content)-1]...)
	out = append(out, textBlock(b.Text[:cut]), textBlock(b.Text[cut:]))
	return out
}

func textBlock(s string) json.RawMessage {
	b, _ := json.Marshal(struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}{"text", s})
	return b
}
