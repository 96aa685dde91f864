package gateway

import (
	"encoding/json"
	"errors"
	"strings"

	"github.com/meridian-gw/meridian/internal/anthropic"
	"github.com/meridian-gw/meridian/internal/backend"
	"github.com/meridian-gw/meridian/internal/textstop"
)

// Output receives one response as it is produced. Implementations render a
// protocol (Anthropic SSE, an accumulated JSON message, later OpenAI). Block
// indices are contiguous from 0. Calls come from one goroutine.
type Output interface {
	// Start begins the response; it comes once, before any block.
	Start(Start) error
	BlockStart(index int, block json.RawMessage) error
	BlockDelta(index int, delta json.RawMessage) error
	BlockStop(index int) error
	// Abandon says the stopped block at index belonged to an upstream
	// message that broke off and was retried. A stream cannot take it back;
	// an accumulated answer leaves it out.
	Abandon(index int)
	// Flush sends what was rendered so far; output may be held until then.
	Flush() error
	// Finish ends a successful response.
	Finish(Finish) error
}

// SessionNamer is an Output that can be told the backend session's id
// before the response starts: the id is chosen before the CLI starts, so a
// stream that opens early (a keep-alive ping) still names it.
type SessionNamer interface {
	NameSession(id string)
}

// nameSession tells out the session's id, if it listens.
func nameSession(out Output, id string) {
	if n, ok := out.(SessionNamer); ok && id != "" {
		n.NameSession(id)
	}
}

// Start opens a response.
type Start struct {
	ID        string
	Model     string
	Usage     anthropic.Usage
	SessionID string // the backend's session id, when known
}

// Finish closes a response.
type Finish struct {
	StopReason   string
	StopSequence string
	Usage        anthropic.Usage
	SessionID    string
	// Content is the whole answer as the client received it, abandoned
	// blocks left out: what a JSON response carries.
	Content []json.RawMessage
	// Unsaved says why the conversation's state after this answer could
	// not be saved ("" when it was): the next turn resumes from the last
	// saved state, or replays. Outputs tell the client.
	Unsaved string
	// NativeWork says what the CLI's own tools did ("tool: ran; …"), for
	// a CLI whose tools are gated; "" for none. Outputs tell the client.
	NativeWork string
}

// errEnough ends a turn early: a stop sequence matched or the output limit
// was reached, and the answer so far is the answer.
var errEnough = errors.New("gateway: response complete")

// relay turns backend events into Output calls for one response: it drops
// blocks the client did not ask for (thinking), renumbers the rest,
// applies stop sequences, and ends the response when the upstream reports
// its output limit.
type relay struct {
	out      Output
	start    Start
	started  bool
	thinking bool
	session  func() string

	// Client tools: their schemas, how to answer a call the client will not
	// see, and the calls this response hands to the client.
	tools  *clientTools
	answer func(backend.ToolResult) error
	calls  []string
	// pending are the backend indices of this message's complete calls,
	// checked as one batch when the message ends.
	pending []int

	blocks []block // by backend index
	next   int     // next client index
	stops  *textstop.Matcher
	stopAt string // the stop sequence that matched

	usage    anthropic.Usage // summed over finished upstream messages
	msgUsage anthropic.Usage // the current upstream message's counts
	// reported is what earlier responses of the same backend turn already
	// reported: a turn paused for client tools and continued here counts
	// its calls before the pause in its own total.
	reported anthropic.Usage
	delta    []byte
	reply    reply
	// unsaved is why the turn's state was not saved, for Finish.
	unsaved string
	// format, when the backend enforces it, makes the answer the
	// structured value alone: the model's own text is not passed on.
	format     *anthropic.OutputFormat
	formatSent bool
}

type block struct {
	client int // client index, -1 when dropped (or not yet released)
	kind   string
	open   bool
	call   *heldCall // a tool call, held until its arguments are checked
}

// heldCall is a client tool call whose arguments are still streaming: it
// reaches the client only once they are complete and valid, so a call the
// client could not execute is never seen by it.
type heldCall struct {
	start  json.RawMessage
	id     string
	name   string
	deltas []json.RawMessage
	input  []byte
}

func newRelay(out Output, start Start, req *anthropic.MessagesRequest, session func() string) *relay {
	return &relay{
		out:      out,
		start:    start,
		session:  session,
		thinking: req.Thinking.Enabled(),
		stops:    textstop.New(req.StopSequences),
	}
}

func (r *relay) begin() error {
	if r.started {
		return nil
	}
	r.started = true
	r.start.SessionID = r.session()
	return r.out.Start(r.start)
}

// handle is the backend's emit callback.
func (r *relay) handle(ev *backend.Event) error {
	switch ev.Kind {
	case backend.MessageStart:
		r.closeMessageUsage()
		r.msgUsage = usageOf(ev.Usage)
		if !r.started {
			r.start.Usage = r.msgUsage
			if ev.Model != "" {
				r.start.Model = ev.Model // the model that answers, as the backend resolved it
			}
		}
		return r.begin()
	case backend.BlockStart:
		b := block{client: -1, kind: ev.BlockType}
		if ev.BlockType == anthropic.BlockToolUse {
			b.open, b.call = true, holdCall(ev.Block)
			r.setBlock(ev.Index, b)
			return nil
		}
		// Blocks reach the client in order: the calls before this one are
		// a batch of their own.
		if err := r.releaseBatch(); err != nil {
			return err
		}
		if r.wanted(ev.BlockType) {
			b.client, b.open = r.next, true
			r.next++
		}
		r.setBlock(ev.Index, b)
		if !b.open {
			return nil
		}
		if err := r.begin(); err != nil {
			return err
		}
		r.reply.startBlock(b.client, ev.BlockType, ev.Block)
		return r.out.BlockStart(b.client, ev.Block)
	case backend.BlockDelta:
		b := r.block(ev.Index)
		if b == nil || !b.open {
			return nil
		}
		if b.call != nil {
			b.call.add(ev.Delta)
			return nil
		}
		if ev.DeltaType == "text_delta" {
			if r.stops.Active() {
				return r.textDelta(b, ev.Text)
			}
			r.reply.addText(b.client, ev.Text)
		} else {
			r.reply.addDelta(b.client, ev.Delta)
		}
		return r.out.BlockDelta(b.client, ev.Delta)
	case backend.BlockStop:
		b := r.block(ev.Index)
		if b == nil || !b.open {
			return nil
		}
		if b.call != nil {
			r.holdStopped(ev.Index)
			return nil
		}
		if b.kind == "text" && r.stops.Active() {
			if rest := r.stops.Flush(); rest != "" {
				if err := r.writeText(b.client, rest); err != nil {
					return err
				}
			}
		}
		return r.stopBlock(b)
	case backend.Abandon:
		if b := r.block(ev.Index); b != nil && b.client >= 0 {
			r.reply.abandon(b.client)
			r.out.Abandon(b.client)
		}
	case backend.Flush:
		if r.started {
			return r.out.Flush()
		}
	case backend.MessageDelta:
		if err := r.releaseBatch(); err != nil {
			return err
		}
		if ev.Usage.OutputTokens > 0 {
			r.msgUsage.OutputTokens = ev.Usage.OutputTokens
		}
		if ev.StopReason == anthropic.StopMaxTokens {
			// The CLI would ask the model to go on; the Messages API stops.
			return errEnough
		}
		if ev.StopReason == anthropic.StopToolUse && len(r.calls) > 0 {
			// The client runs its tools; the turn waits in the backend.
			return backend.ErrPause
		}
	}
	return nil
}

func (r *relay) wanted(blockType string) bool {
	switch blockType {
	case "thinking", "redacted_thinking":
		return r.thinking
	case anthropic.BlockText:
		return r.format == nil
	}
	return true
}

func (r *relay) setBlock(idx int, b block) {
	for len(r.blocks) <= idx {
		r.blocks = append(r.blocks, block{client: -1})
	}
	r.blocks[idx] = b
}

func (r *relay) block(idx int) *block {
	if idx < 0 || idx >= len(r.blocks) {
		return nil
	}
	return &r.blocks[idx]
}

func (r *relay) stopBlock(b *block) error {
	b.open = false
	return r.out.BlockStop(b.client)
}

func holdCall(start json.RawMessage) *heldCall {
	var b struct {
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	}
	_ = json.Unmarshal(start, &b)
	return &heldCall{start: start, id: b.ID, name: b.Name}
}

func (c *heldCall) add(delta json.RawMessage) {
	var d struct {
		PartialJSON string `json:"partial_json"`
	}
	if json.Unmarshal(delta, &d) == nil {
		c.deltas = append(c.deltas, delta)
		c.input = append(c.input, d.PartialJSON...)
	}
}

// textDelta passes text through the stop-sequence matcher.
func (r *relay) textDelta(b *block, text string) error {
	release, stop := r.stops.Feed(text)
	if release != "" {
		if err := r.writeText(b.client, release); err != nil {
			return err
		}
	}
	if stop == "" {
		return nil
	}
	r.stopAt = stop
	if err := r.stopBlock(b); err != nil {
		return err
	}
	return errEnough
}

func (r *relay) writeText(idx int, text string) error {
	r.reply.addText(idx, text)
	r.delta = append(r.delta[:0], `{"type":"text_delta","text":`...)
	r.delta = anthropic.AppendString(r.delta, text)
	r.delta = append(r.delta, '}')
	return r.out.BlockDelta(idx, r.delta)
}

func (r *relay) closeMessageUsage() {
	r.usage = plus(r.usage, r.msgUsage)
	r.msgUsage = anthropic.Usage{}
}

// finish ends a turn the backend completed.
func (r *relay) finish(res *backend.Result) error {
	if err := r.releaseBatch(); err != nil {
		return err
	}
	if err := r.structured(res); err != nil {
		return err
	}
	if err := r.begin(); err != nil {
		return err
	}
	stop := res.StopReason
	if stop == "" || stop == anthropic.StopToolUse {
		// The CLI answered its own tool calls; the client sees a final answer.
		stop = anthropic.StopEndTurn
	}
	u := withSearches(minus(usageOf(res.Usage), r.reported), res.WebSearches)
	return r.out.Finish(Finish{StopReason: stop, Usage: u, SessionID: res.SessionID, Content: r.reply.content(), Unsaved: r.unsaved,
		NativeWork: strings.Join(res.NativeWork, "; ")})
}

// finishPaused ends a response whose turn waits for client tool results.
func (r *relay) finishPaused(res *backend.Result) error {
	if err := r.releaseBatch(); err != nil {
		return err
	}
	r.closeMessageUsage()
	if err := r.begin(); err != nil {
		return err
	}
	return r.out.Finish(Finish{StopReason: anthropic.StopToolUse, Usage: withSearches(r.usage, res.WebSearches), SessionID: r.session(), Content: r.reply.content(), Unsaved: r.unsaved})
}

// finishEarly ends a turn the relay cut short. The CLI's own totals for an
// interrupted turn are not reliable, so usage is what the stream reported.
func (r *relay) finishEarly() error {
	r.closeMessageUsage()
	if err := r.closeOpenBlocks(); err != nil {
		return err
	}
	f := Finish{StopReason: anthropic.StopMaxTokens, Usage: r.usage, SessionID: r.session(), Content: r.reply.content()}
	if r.stopAt != "" {
		f.StopReason, f.StopSequence = anthropic.StopSequence, r.stopAt
	}
	if err := r.begin(); err != nil {
		return err
	}
	return r.out.Finish(f)
}

// closeOpenBlocks is for an early end: blocks the backend never stopped
// are closed so the client's stream stays well formed.
func (r *relay) closeOpenBlocks() error {
	for i := range r.blocks {
		b := &r.blocks[i]
		if !b.open {
			continue
		}
		if b.call != nil {
			// A held call never reached the client: nothing to close.
			b.open, b.call = false, nil
			continue
		}
		if b.kind == "text" && r.stopAt == "" {
			if rest := r.stops.Flush(); rest != "" {
				if err := r.writeText(b.client, rest); err != nil {
					return err
				}
			}
		}
		if err := r.stopBlock(b); err != nil {
			return err
		}
	}
	return nil
}

// withSearches is u counting the web searches the backend ran, if any.
func withSearches(u anthropic.Usage, n int) anthropic.Usage {
	if n > 0 {
		u.ServerToolUse = &anthropic.ServerToolUse{WebSearchRequests: n}
	}
	return u
}

// minus is a's counts less b's, none below zero.
func minus(a, b anthropic.Usage) anthropic.Usage {
	sub := func(x, y int) int { return max(x-y, 0) }
	return anthropic.Usage{
		InputTokens:              sub(a.InputTokens, b.InputTokens),
		OutputTokens:             sub(a.OutputTokens, b.OutputTokens),
		CacheCreationInputTokens: sub(a.CacheCreationInputTokens, b.CacheCreationInputTokens),
		CacheReadInputTokens:     sub(a.CacheReadInputTokens, b.CacheReadInputTokens),
	}
}

// plus is the sum of a's and b's counts.
func plus(a, b anthropic.Usage) anthropic.Usage {
	return anthropic.Usage{
		InputTokens:              a.InputTokens + b.InputTokens,
		OutputTokens:             a.OutputTokens + b.OutputTokens,
		CacheCreationInputTokens: a.CacheCreationInputTokens + b.CacheCreationInputTokens,
		CacheReadInputTokens:     a.CacheReadInputTokens + b.CacheReadInputTokens,
	}
}

func backendUsage(u anthropic.Usage) backend.Usage {
	return backend.Usage{
		InputTokens:              u.InputTokens,
		OutputTokens:             u.OutputTokens,
		CacheCreationInputTokens: u.CacheCreationInputTokens,
		CacheReadInputTokens:     u.CacheReadInputTokens,
	}
}

func usageOf(u backend.Usage) anthropic.Usage {
	return anthropic.Usage{
		InputTokens:              u.InputTokens,
		OutputTokens:             u.OutputTokens,
		CacheCreationInputTokens: u.CacheCreationInputTokens,
		CacheReadInputTokens:     u.CacheReadInputTokens,
	}
}
