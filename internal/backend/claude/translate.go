package claude

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/meridian-gw/meridian/internal/backend"
)

// translator turns one turn's CLI output into backend events.
//
// The CLI relays the upstream's SSE events as stream_event lines, one
// upstream message per API call. A turn may span several calls (the CLI
// answers a tool call and asks again), each restarting block indices at 0,
// so blocks get turn-wide indices here. When a stream breaks, the CLI marks
// the begun blocks abandoned and retries without streaming; that retry's
// content arrives only as assistant lines, one block per line, and is
// replayed here as start/delta/stop events so no answer is lost.
type translator struct {
	emit  func(*backend.Event) error
	tools *toolset
	ev    backend.Event
	next  int        // next turn-wide block index
	msgs  []*message // upstream messages of this turn, in order

	apiErr *line  // synthetic assistant line describing an API error
	pin    string // uuid of the turn's last assistant message
	// unstreamed is a replayed message whose stop reason is held until its
	// last block has gone out: every one of its lines carries the reason,
	// and only the next line of another kind shows the message is complete.
	unstreamed *message
	stopReason string
	retry      *line // last system/api_retry line
	rateLimit  *line // last rate_limit_event line

	// Web search, when the session enables it: the calls whose results
	// are still to come, and the searches this response ran.
	search    bool
	searchIDs map[string]bool
	searches  int
}

// maxBlocks bounds the block index one upstream message may use: a larger
// or negative index is malformed output, ignored rather than trusted with
// an allocation.
const maxBlocks = 4096

// message tracks one upstream message within the turn.
type message struct {
	id         string
	streamed   bool  // its stream events were seen
	index      []int // upstream block index → turn index, -1 when not forwarded
	open       []bool
	assistants int  // assistant lines seen (one per block)
	stopped    bool // a stop reason was reported
}

func newTranslator(emit func(*backend.Event) error, tools *toolset) *translator {
	return &translator{emit: emit, tools: tools}
}

// forward decides whether a block reaches the client, and in what form:
// text and thinking as they are, calls of the client's tools under the
// client's names. Any other tool call is the CLI's own business.
func (t *translator) forward(block json.RawMessage) (blockType string, out json.RawMessage, ok bool) {
	var b struct {
		Type string `json:"type"`
		ID   string `json:"id"`
		Name string `json:"name"`
	}
	_ = json.Unmarshal(block, &b)
	switch b.Type {
	case "text", "thinking", "redacted_thinking":
		return b.Type, block, true
	case "tool_use":
		if name, ok := t.tools.client(b.Name); ok {
			return b.Type, rewriteToolName(block, name), true
		}
		if t.search && b.Name == cliWebSearch && b.ID != "" {
			if t.searchIDs == nil {
				t.searchIDs = map[string]bool{}
			}
			t.searchIDs[b.ID] = true
			return "server_tool_use", serverToolUse(block), true
		}
	}
	return b.Type, nil, false
}

// handle processes one line; it returns the turn's result on the last line.
func (t *translator) handle(l *line) (*backend.Result, error) {
	if l.ParentToolUseID != nil && *l.ParentToolUseID != "" {
		return nil, nil // a subagent's traffic, not the answer
	}
	if t.unstreamed != nil && !t.continues(l) {
		if err := t.flushStop(); err != nil {
			return nil, err
		}
	}
	switch l.Type {
	case "stream_event":
		return nil, t.streamEvent(l)
	case "assistant":
		return nil, t.assistant(l)
	case "user":
		return nil, t.searchResults(l)
	case "result":
		return t.result(l), nil
	case "system":
		if l.Subtype == "api_retry" {
			t.retry = l
			t.ev = backend.Event{Kind: backend.Retry, RetryDelay: millis(l.RetryDelayMS), Status: intOr(l.ErrorStatus)}
			return nil, t.emit(&t.ev)
		}
	case "rate_limit_event":
		if l.RateLimitInfo != nil {
			t.rateLimit = l
			info := l.RateLimitInfo
			t.ev = backend.Event{Kind: backend.RateLimit, LimitStatus: info.Status, ResetsAt: unixTime(info.ResetsAt),
				LimitType: info.RateLimitType, Utilization: info.Utilization, Windows: limitWindows(info.UnifiedWindows),
				Overage: info.IsUsingOverage}
			return nil, t.emit(&t.ev)
		}
	}
	return nil, nil
}

func (t *translator) message(id string) *message {
	for i := len(t.msgs) - 1; i >= 0; i-- {
		if t.msgs[i].id == id {
			return t.msgs[i]
		}
	}
	m := &message{id: id}
	t.msgs = append(t.msgs, m)
	return m
}

func (t *translator) streamEvent(l *line) error {
	if l.Event == nil {
		return nil
	}
	se := l.Event
	id := l.APIMessageID
	switch se.Type {
	case "message_start":
		if id == "" && se.Message != nil {
			id = se.Message.ID
		}
		m := t.message(id)
		m.streamed = true
		t.ev = backend.Event{Kind: backend.MessageStart}
		if se.Message != nil {
			t.ev.Model = se.Message.Model
			if se.Message.Usage != nil {
				t.ev.Usage = se.Message.Usage.backend()
			}
		}
		return t.emit(&t.ev)
	case "content_block_start":
		m := t.message(id)
		m.streamed = true
		if se.Index < 0 || se.Index >= maxBlocks {
			return nil // malformed output is never fatal
		}
		blockType, block, ok := t.forward(se.ContentBlock)
		idx := -1
		if ok {
			idx = t.next
			t.next++
		}
		m.setIndex(se.Index, idx)
		if idx < 0 {
			return nil
		}
		t.ev = backend.Event{Kind: backend.BlockStart, Index: idx, BlockType: blockType, Block: block}
		return t.emit(&t.ev)
	case "content_block_delta":
		m := t.message(id)
		idx := m.turnIndex(se.Index)
		if idx < 0 {
			return nil
		}
		var df deltaFields
		_ = json.Unmarshal(se.Delta, &df)
		t.ev = backend.Event{Kind: backend.BlockDelta, Index: idx, DeltaType: df.Type, Delta: se.Delta, Text: df.Text}
		return t.emit(&t.ev)
	case "content_block_stop":
		m := t.message(id)
		idx := m.turnIndex(se.Index)
		if idx < 0 || !m.open[se.Index] {
			return nil
		}
		m.open[se.Index] = false
		t.ev = backend.Event{Kind: backend.BlockStop, Index: idx}
		return t.emit(&t.ev)
	case "message_delta":
		m := t.message(id)
		var df deltaFields
		_ = json.Unmarshal(se.Delta, &df)
		if df.StopReason == "" || m.stopped {
			return nil
		}
		m.stopped = true
		t.ev = backend.Event{Kind: backend.MessageDelta, StopReason: df.StopReason}
		if se.Usage != nil {
			t.ev.Usage = se.Usage.backend()
		}
		return t.emit(&t.ev)
	case "message_stop":
		if ab := l.AbandonedBlocks; ab != nil {
			return t.abandon(t.message(ab.APIMessageID), ab.FromBlockIndex)
		}
	}
	return nil
}

// abandon closes and abandons the blocks of a message that broke off.
func (t *translator) abandon(m *message, from int) error {
	for up := max(from, 0); up < len(m.index); up++ {
		idx := m.index[up]
		if idx < 0 {
			continue
		}
		if m.open[up] {
			m.open[up] = false
			t.ev = backend.Event{Kind: backend.BlockStop, Index: idx}
			if err := t.emit(&t.ev); err != nil {
				return err
			}
		}
		t.ev = backend.Event{Kind: backend.Abandon, Index: idx}
		if err := t.emit(&t.ev); err != nil {
			return err
		}
	}
	return nil
}

// assistant handles a complete assistant line. Streamed messages were
// already relayed block by block; a message that was never streamed (the
// CLI's non-streaming fallback) is replayed from these lines.
func (t *translator) assistant(l *line) error {
	if l.IsAPIErrorMessage {
		t.apiErr = l
		return nil
	}
	var am assistantMessage
	if err := json.Unmarshal(l.Message, &am); err != nil || am.ID == "" {
		return nil
	}
	if l.UUID != "" {
		t.pin = l.UUID
	}
	m := t.message(am.ID)
	m.assistants++
	if m.streamed {
		return nil
	}
	for _, block := range am.Content {
		if err := t.replayBlock(block); err != nil {
			return err
		}
	}
	if am.StopReason != "" && !m.stopped {
		t.unstreamed, t.stopReason = m, am.StopReason
	}
	return nil
}

// continues reports whether l is another block of the replayed message.
func (t *translator) continues(l *line) bool {
	if l.Type != "assistant" || l.IsAPIErrorMessage {
		return false
	}
	var am struct {
		ID string `json:"id"`
	}
	return json.Unmarshal(l.Message, &am) == nil && am.ID == t.unstreamed.id
}

func (t *translator) flushStop() error {
	m := t.unstreamed
	t.unstreamed = nil
	if m.stopped {
		return nil
	}
	m.stopped = true
	t.ev = backend.Event{Kind: backend.MessageDelta, StopReason: t.stopReason}
	return t.emit(&t.ev)
}

// replayBlock emits a complete block as start, deltas and stop, the way a
// stream would have carried it.
func (t *translator) replayBlock(raw json.RawMessage) error {
	_, block, ok := t.forward(raw)
	var b struct {
		Type      string          `json:"type"`
		Text      string          `json:"text"`
		Thinking  string          `json:"thinking"`
		Signature string          `json:"signature"`
		Input     json.RawMessage `json:"input"`
	}
	if !ok || json.Unmarshal(block, &b) != nil {
		return nil
	}
	idx := t.next
	t.next++
	start, deltas := block, []json.RawMessage(nil)
	switch b.Type {
	case "tool_use", "server_tool_use":
		var m map[string]json.RawMessage
		_ = json.Unmarshal(block, &m)
		m["input"] = json.RawMessage(`{}`)
		start, _ = json.Marshal(m)
		input := b.Input
		if len(input) == 0 {
			input = json.RawMessage(`{}`)
		}
		deltas = append(deltas, mustJSON(map[string]string{"type": "input_json_delta", "partial_json": string(input)}))
	case "text":
		start = json.RawMessage(`{"type":"text","text":""}`)
		deltas = append(deltas, mustJSON(map[string]string{"type": "text_delta", "text": b.Text}))
	case "thinking":
		start = json.RawMessage(`{"type":"thinking","thinking":"","signature":""}`)
		deltas = append(deltas, mustJSON(map[string]string{"type": "thinking_delta", "thinking": b.Thinking}))
		if b.Signature != "" {
			deltas = append(deltas, mustJSON(map[string]string{"type": "signature_delta", "signature": b.Signature}))
		}
	}
	t.ev = backend.Event{Kind: backend.BlockStart, Index: idx, BlockType: b.Type, Block: start}
	if err := t.emit(&t.ev); err != nil {
		return err
	}
	for _, d := range deltas {
		var df deltaFields
		_ = json.Unmarshal(d, &df)
		t.ev = backend.Event{Kind: backend.BlockDelta, Index: idx, DeltaType: df.Type, Delta: d, Text: df.Text}
		if err := t.emit(&t.ev); err != nil {
			return err
		}
	}
	t.ev = backend.Event{Kind: backend.BlockStop, Index: idx}
	return t.emit(&t.ev)
}

func (m *message) setIndex(up, idx int) {
	for len(m.index) <= up {
		m.index = append(m.index, -1)
		m.open = append(m.open, false)
	}
	m.index[up] = idx
	m.open[up] = idx >= 0
}

func (m *message) turnIndex(up int) int {
	if up < 0 || up >= len(m.index) {
		return -1
	}
	return m.index[up]
}

// result builds the turn's result. The CLI reports API errors as subtype
// "success" with is_error set, so both are checked.
func (t *translator) result(l *line) *backend.Result {
	res := &backend.Result{SessionID: l.SessionID, StopReason: l.StopReason, Pin: t.pin, Text: l.Result, CostUSD: l.TotalCostUSD,
		WebSearches: t.searches}
	if s := bytes.TrimSpace(l.StructuredOutput); len(s) > 0 && string(s) != "null" {
		res.Structured = l.StructuredOutput
	}
	if l.Usage != nil {
		res.Usage = l.Usage.backend()
	}
	if l.IsError || l.Subtype != "success" {
		res.Failure = t.failure(l)
		res.StopReason = ""
	}
	return res
}

func (t *translator) failure(l *line) *backend.Failure {
	f := &backend.Failure{Kind: backend.FailBackend, Message: l.Result}
	if f.Message == "" {
		f.Message = strings.Join(l.Errors, "; ")
	}
	if f.Message == "" {
		f.Message = bareFailure(l)
	}
	status := intOr(l.APIErrorStatus)
	errType := l.APIErrorType
	if t.apiErr != nil {
		if status == 0 {
			status = intOr(t.apiErr.APIErrorStatus)
		}
		if errType == "" {
			errType = t.apiErr.APIErrorType
		}
		f.Code = t.apiErr.APIError
		if p := t.apiErr.APIErrorParams; p != nil && p.RateLimitInfo != nil {
			f.ResetsAt = unixTime(p.RateLimitInfo.ResetsAt)
		}
	}
	switch {
	case l.TerminalReason == "prompt_too_long":
		f.Kind, f.Status = backend.FailPromptTooLong, 400
	case l.Subtype == "error_max_structured_output_retries":
		f.Kind = backend.FailFormat
	case l.Subtype == "error_max_turns" || l.Subtype == "error_max_budget_usd" || l.APIError == "max_output_tokens":
		f.Kind = backend.FailLimit
	case status != 0 || l.TerminalReason == "api_error":
		f.Kind, f.Status, f.Type = backend.FailUpstream, status, errType
	}
	if t.retry != nil && status != 0 && intOr(t.retry.ErrorStatus) == status {
		f.RetryDelay = millis(t.retry.RetryDelayMS)
	}
	if f.ResetsAt.IsZero() && t.rateLimit != nil && t.rateLimit.RateLimitInfo.Status == "rejected" {
		f.ResetsAt = unixTime(t.rateLimit.RateLimitInfo.ResetsAt)
	}
	return f
}

func (u *usageJSON) backend() backend.Usage {
	return backend.Usage{
		InputTokens:              u.InputTokens,
		OutputTokens:             u.OutputTokens,
		CacheCreationInputTokens: u.CacheCreationInputTokens,
		CacheReadInputTokens:     u.CacheReadInputTokens,
	}
}

func intOr(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

func millis(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }

func unixTime(sec float64) time.Time {
	if sec <= 0 {
		return time.Time{}
	}
	return time.Unix(0, int64(sec*float64(time.Second)))
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only called with string maps
	}
	return b
}

// bareFailure says what happened when the CLI ends a turn as failed with
// no message of its own: what it does report, or that it reported nothing.
func bareFailure(l *line) string {
	var facts []string
	if l.Subtype != "" && l.Subtype != "success" {
		facts = append(facts, l.Subtype)
	}
	if l.TerminalReason != "" && l.TerminalReason != "completed" {
		facts = append(facts, "terminal reason "+l.TerminalReason)
	}
	if len(facts) == 0 {
		return "claude marked the turn failed without giving a reason (see the CLI's output in meridian's debug log)"
	}
	return "claude ended the turn without an answer: " + strings.Join(facts, ", ")
}

// limitWindows lists a rate_limit_event's windows by name.
func limitWindows(by map[string]unifiedWindow) []backend.LimitWindow {
	if len(by) == 0 {
		return nil
	}
	out := make([]backend.LimitWindow, 0, len(by))
	for name, w := range by {
		out = append(out, backend.LimitWindow{Type: name, Status: w.Status, Utilization: w.Utilization, ResetsAt: unixTime(w.ResetsAt)})
	}
	slices.SortFunc(out, func(a, b backend.LimitWindow) int { return strings.Compare(a.Type, b.Type) })
	return out
}
