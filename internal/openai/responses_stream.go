package openai

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/meridian-gw/meridian/internal/anthropic"
)

// ResponseEncoder renders one response as Responses API events, each with
// its sequence number: response.created and response.in_progress; per
// output item output_item.added, its content (text deltas, function call
// argument deltas, reasoning summary deltas) and output_item.done; then
// exactly one of response.completed, response.incomplete or
// response.failed carrying the whole response. It is fed the gateway's
// Messages API shaped blocks in order and keeps the output the client has
// seen, which is what the final response carries. Not safe for concurrent
// use.
type ResponseEncoder struct {
	meta   ResponseMeta
	model  string
	seq    int
	items  []*outItem
	blocks []int // client block index → output index, -1 when not shown
	// held is the text of the answer, held back while a text format waits
	// for the whole answer to check it.
	held    []byte
	created bool
	// progressed: response.in_progress went out (the run began).
	progressed bool
	final      *Response
	pages      []SearchPage // found by the answer's web searches, for its citations
}

// NewResponseEncoder starts a response's encoder.
func NewResponseEncoder(meta ResponseMeta) *ResponseEncoder {
	return &ResponseEncoder{meta: meta, model: meta.req.Model}
}

// Queued writes response.created for a background response that waits
// for its turn.
func (e *ResponseEncoder) Queued(dst []byte) []byte {
	e.created = true
	return e.event(dst, "response.created", map[string]any{"response": e.snapshot(StatusQueued)})
}

// InProgress writes response.in_progress: a queued response's run has
// begun, before the model answers.
func (e *ResponseEncoder) InProgress(dst []byte) []byte {
	e.progressed = true
	return e.event(dst, "response.in_progress", map[string]any{"response": e.snapshot(StatusInProgress)})
}

// Start writes response.created (unless Queued did) and
// response.in_progress (unless InProgress did) for the model that answers.
func (e *ResponseEncoder) Start(dst []byte, model string) []byte {
	if model != "" {
		e.model = model
	}
	snap := e.snapshot(StatusInProgress)
	if !e.created {
		e.created = true
		dst = e.event(dst, "response.created", map[string]any{"response": snap})
	}
	if e.progressed {
		return dst
	}
	e.progressed = true
	return e.event(dst, "response.in_progress", map[string]any{"response": snap})
}

// Cancelled ends the response as cancelled: its open items are closed and
// the response so far is final. No event names a cancellation; the
// stream simply ends.
func (e *ResponseEncoder) Cancelled(dst []byte) []byte {
	dst = e.cutOpen(dst)
	resp := e.snapshot(StatusCancelled)
	e.final = &resp
	return dst
}

// Model is the model the response names.
func (e *ResponseEncoder) Model() string { return e.model }

// Current is the response as it stands: the final one once ended, else
// the output so far at status.
func (e *ResponseEncoder) Current(status string) Response {
	if e.final != nil {
		return *e.final
	}
	return e.snapshot(status)
}

func (e *ResponseEncoder) snapshot(status string) Response {
	r := e.meta.Snapshot(status, e.output())
	r.Model = e.model
	return r
}

func (e *ResponseEncoder) output() []json.RawMessage {
	out := make([]json.RawMessage, 0, len(e.items))
	for _, it := range e.items {
		out = append(out, e.meta.json(it))
	}
	return out
}

// BlockStart opens an output item for the block at index.
func (e *ResponseEncoder) BlockStart(dst []byte, index int, block json.RawMessage) []byte {
	var b struct {
		Type string `json:"type"`
		ID   string `json:"id"`
		Name string `json:"name"`
	}
	_ = json.Unmarshal(block, &b)
	for len(e.blocks) <= index {
		e.blocks = append(e.blocks, -1)
	}
	it := &outItem{}
	switch b.Type {
	case anthropic.BlockText:
		it.kind = ItemMessage
		if e.meta.req.Format != nil {
			return dst // held: the checked answer goes out at the end
		}
	case anthropic.BlockToolUse:
		dst = e.releaseHeld(dst)
		it.kind = ItemFunctionCall
		e.meta.call(it, b.ID, b.Name)
	case anthropic.BlockServerToolUse:
		it.kind = ItemWebSearchCall
	case anthropic.BlockWebSearchToolResult:
		e.pages = append(e.pages, searchPages(block)...)
		return dst
	case anthropic.BlockThinking, anthropic.BlockRedactedThinking:
		if !e.meta.withReasoning() {
			return dst
		}
		it.kind = ItemReasoning
	default:
		return dst
	}
	return e.open(dst, index, it)
}

func (e *ResponseEncoder) open(dst []byte, index int, it *outItem) []byte {
	at := len(e.items)
	it.id = e.meta.itemID(it.kind, at)
	e.items = append(e.items, it)
	if index >= 0 {
		e.blocks[index] = at
	}
	dst = e.event(dst, "response.output_item.added", map[string]any{"output_index": at, "item": json.RawMessage(e.meta.json(it))})
	switch it.kind {
	case ItemMessage:
		dst = e.event(dst, "response.content_part.added", map[string]any{"item_id": it.id, "output_index": at, "content_index": 0, "part": outputText("")})
	case ItemReasoning:
		if e.summaries() {
			dst = e.event(dst, "response.reasoning_summary_part.added", map[string]any{"item_id": it.id, "output_index": at, "summary_index": 0, "part": summaryText("")})
		}
	case ItemWebSearchCall:
		dst = e.event(dst, "response.web_search_call.in_progress", map[string]any{"item_id": it.id, "output_index": at})
		dst = e.event(dst, "response.web_search_call.searching", map[string]any{"item_id": it.id, "output_index": at})
	}
	return dst
}

func (e *ResponseEncoder) summaries() bool { return e.meta.req.ReasoningSummary != "" }

// BlockDelta writes a piece of the block at index.
func (e *ResponseEncoder) BlockDelta(dst []byte, index int, delta json.RawMessage) []byte {
	if raw, ok := plainTextDelta(delta); ok && e.meta.req.Format == nil {
		it, at := e.item(index)
		var s string
		if it == nil || json.Unmarshal(raw, &s) != nil {
			return dst
		}
		it.text = append(it.text, s...)
		return e.textDelta(dst, it.id, at, raw)
	}
	var d struct {
		Type        string          `json:"type"`
		Text        json.RawMessage `json:"text"`
		Thinking    json.RawMessage `json:"thinking"`
		Signature   string          `json:"signature"`
		PartialJSON json.RawMessage `json:"partial_json"`
	}
	if json.Unmarshal(delta, &d) != nil {
		return dst
	}
	if d.Type == "text_delta" && e.meta.req.Format != nil {
		var s string
		_ = json.Unmarshal(d.Text, &s)
		e.held = append(e.held, s...)
		return dst
	}
	it, at := e.item(index)
	if it == nil {
		return dst
	}
	var s string
	switch d.Type {
	case "text_delta":
		_ = json.Unmarshal(d.Text, &s)
		it.text = append(it.text, s...)
		return e.textDelta(dst, it.id, at, d.Text)
	case "thinking_delta":
		_ = json.Unmarshal(d.Thinking, &s)
		it.thought.Thinking += s
		if !e.summaries() {
			return dst
		}
		it.text = append(it.text, s...)
		return e.event(dst, "response.reasoning_summary_text.delta", map[string]any{"item_id": it.id, "output_index": at, "summary_index": 0, "delta": s})
	case "signature_delta":
		it.thought.Signature += d.Signature
	case "input_json_delta":
		_ = json.Unmarshal(d.PartialJSON, &s)
		if s == "" {
			return dst
		}
		it.text = append(it.text, s...)
		if it.kind == ItemWebSearchCall || it.custom {
			return dst // a custom call's input goes whole when the call is complete
		}
		return e.event(dst, "response.function_call_arguments.delta", map[string]any{"item_id": it.id, "output_index": at, "delta": s})
	}
	return dst
}

// textDelta is the hot path, written without a map: the delta arrives as
// a JSON string already.
func (e *ResponseEncoder) textDelta(dst []byte, itemID string, at int, text json.RawMessage) []byte {
	dst = append(dst, "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":"...)
	dst = strconv.AppendInt(dst, int64(e.seq), 10)
	e.seq++
	dst = append(dst, `,"item_id":`...)
	dst = anthropic.AppendString(dst, itemID)
	dst = append(dst, `,"output_index":`...)
	dst = strconv.AppendInt(dst, int64(at), 10)
	dst = append(dst, `,"content_index":0,"delta":`...)
	dst = append(dst, text...)
	return append(dst, ",\"logprobs\":[]}\n\n"...)
}

func (e *ResponseEncoder) item(index int) (*outItem, int) {
	if index < 0 || index >= len(e.blocks) || e.blocks[index] < 0 {
		return nil, -1
	}
	at := e.blocks[index]
	return e.items[at], at
}

// BlockStop finishes the block's output item.
func (e *ResponseEncoder) BlockStop(dst []byte, index int) []byte {
	it, at := e.item(index)
	if it == nil || it.done {
		return dst
	}
	return e.close(dst, it, at)
}

func (e *ResponseEncoder) close(dst []byte, it *outItem, at int) []byte {
	it.done = true
	text := string(it.text)
	switch it.kind {
	case ItemMessage:
		it.cites = citations(text, e.pages)
		dst = e.event(dst, "response.output_text.done", map[string]any{"item_id": it.id, "output_index": at, "content_index": 0, "text": text, "logprobs": []any{}})
		dst = e.event(dst, "response.content_part.done", map[string]any{"item_id": it.id, "output_index": at, "content_index": 0, "part": citedText(text, it.cites)})
	case ItemWebSearchCall:
		dst = e.event(dst, "response.web_search_call.completed", map[string]any{"item_id": it.id, "output_index": at})
	case ItemFunctionCall:
		if text == "" {
			it.text = []byte("{}")
		}
		if it.custom {
			input := customInput(it.text)
			dst = e.event(dst, "response.custom_tool_call_input.delta", map[string]any{"item_id": it.id, "output_index": at, "delta": input})
			dst = e.event(dst, "response.custom_tool_call_input.done", map[string]any{"item_id": it.id, "output_index": at, "input": input})
			break
		}
		dst = e.event(dst, "response.function_call_arguments.done", map[string]any{"item_id": it.id, "output_index": at, "name": it.name, "arguments": string(it.text)})
	case ItemReasoning:
		if e.summaries() {
			dst = e.event(dst, "response.reasoning_summary_text.done", map[string]any{"item_id": it.id, "output_index": at, "summary_index": 0, "text": text})
			dst = e.event(dst, "response.reasoning_summary_part.done", map[string]any{"item_id": it.id, "output_index": at, "summary_index": 0, "part": summaryText(text)})
		}
	}
	return e.event(dst, "response.output_item.done", map[string]any{"output_index": at, "item": json.RawMessage(e.meta.json(it))})
}

// releaseHeld sends held text as one message item, as it is.
func (e *ResponseEncoder) releaseHeld(dst []byte) []byte {
	if len(e.held) == 0 {
		return dst
	}
	text := e.held
	e.held = nil
	return e.message(dst, string(text))
}

// message sends a whole message item at once.
func (e *ResponseEncoder) message(dst []byte, text string) []byte {
	it := &outItem{kind: ItemMessage}
	dst = e.open(dst, -1, it)
	at := len(e.items) - 1
	it.text = []byte(text)
	dst = e.textDelta(dst, it.id, at, anthropic.AppendString(nil, text))
	return e.close(dst, it, at)
}

// Finish ends a finished answer: the held text, checked when the answer is
// complete (an answer that does not fit the format is a *FormatError and
// nothing is written), then the final event.
func (e *ResponseEncoder) Finish(dst []byte, stopReason string, u anthropic.Usage) ([]byte, error) {
	resp := e.meta.Final(nil, stopReason, u)
	if e.meta.req.Format != nil && len(e.held) > 0 && resp.Status == StatusCompleted {
		checked, err := e.meta.req.Format.Check(string(e.held))
		if err != nil {
			return dst, err
		}
		e.held = []byte(checked)
	}
	dst = e.releaseHeld(dst)
	dst = e.closeOpen(dst)
	resp.Output, resp.Model = e.output(), e.model
	e.final = &resp
	name := "response.completed"
	if resp.Status == StatusIncomplete {
		name = "response.incomplete"
	}
	return e.event(dst, name, map[string]any{"response": resp}), nil
}

// Fail ends the response as failed, with the error and its wait.
func (e *ResponseEncoder) Fail(dst []byte, status int, message string, retryAfter int) []byte {
	dst = e.cutOpen(dst)
	resp := e.meta.Failed(e.output(), status, message, retryAfter)
	resp.Model = e.model
	e.final = &resp
	return e.event(dst, "response.failed", map[string]any{"response": resp})
}

// Final is the response object once the encoder has ended it, else nil.
func (e *ResponseEncoder) Final() *Response { return e.final }

// Seq is the sequence number the next event gets.
func (e *ResponseEncoder) Seq() int { return e.seq }

// cutOpen closes the items still open as incomplete: the response ended
// before they did.
func (e *ResponseEncoder) cutOpen(dst []byte) []byte {
	for _, it := range e.items {
		if !it.done {
			it.cut = true
		}
	}
	return e.closeOpen(dst)
}

func (e *ResponseEncoder) closeOpen(dst []byte) []byte {
	for at, it := range e.items {
		if !it.done {
			dst = e.close(dst, it, at)
		}
	}
	return dst
}

// event writes one SSE event with its type and sequence number.
func (e *ResponseEncoder) event(dst []byte, typ string, fields map[string]any) []byte {
	fields["type"] = typ
	fields["sequence_number"] = e.seq
	e.seq++
	body, _ := json.Marshal(fields)
	dst = append(dst, "event: "...)
	dst = append(dst, typ...)
	dst = append(dst, "\ndata: "...)
	dst = append(dst, body...)
	return append(dst, "\n\n"...)
}

// AppendFailedAfter writes the response.failed event that ends a stream
// rendered elsewhere and cut before its end: a host relaying another's
// stream knows the response only from the snapshot its response.created
// or response.in_progress event carried, and the sequence number the next
// event gets. The failed response carries that snapshot's fields and no
// output: what the client saw of the output came in the deltas.
func AppendFailedAfter(dst []byte, snapshot json.RawMessage, seq, status int, message string, retryAfter int) ([]byte, error) {
	var resp Response
	if err := json.Unmarshal(snapshot, &resp); err != nil {
		return dst, fmt.Errorf("openai: the relayed response's snapshot: %w", err)
	}
	resp.Status = StatusFailed
	resp.Output = []json.RawMessage{}
	resp.Usage = nil
	typ, code := errorKind(status)
	if code == "" {
		code = typ
	}
	resp.Error = &ResponseError{Code: code, Message: message, RetryAfter: retryAfter}
	body, err := json.Marshal(map[string]any{"type": "response.failed", "sequence_number": seq, "response": resp})
	if err != nil {
		return dst, fmt.Errorf("openai: the relayed response.failed: %w", err)
	}
	dst = append(dst, "event: response.failed\ndata: "...)
	dst = append(dst, body...)
	return append(dst, "\n\n"...), nil
}

// AppendStreamError writes the Responses API's error event: a stream that
// failed before any event named its response.
func AppendStreamError(dst []byte, seq, status int, message string, retryAfter int) []byte {
	typ, code := errorKind(status)
	if code == "" {
		code = typ
	}
	ev := map[string]any{"type": "error", "code": code, "message": message, "param": nil, "sequence_number": seq}
	if retryAfter > 0 {
		ev["retry_after"] = retryAfter
	}
	body, _ := json.Marshal(ev)
	dst = append(dst, "event: error\ndata: "...)
	dst = append(dst, body...)
	return append(dst, "\n\n"...)
}
