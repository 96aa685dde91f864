package openai

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/meridian-gw/meridian/internal/anthropic"
)

// ChunkEncoder renders one response as chat.completion.chunk events. It is
// fed the gateway's Messages API shaped blocks and deltas in order: the
// role first, text as content deltas, thinking as reasoning_content
// deltas, each tool call as tool_calls[i] with its id and name once and its
// arguments in pieces; then the finish reason, the usage when asked for,
// and the end marker. It is not safe for concurrent use.
type ChunkEncoder struct {
	id           string
	created      int64
	includeUsage bool
	format       *ResponseFormat

	prefix []byte // {"id":…,"object":…,"created":…,"model":…
	blocks []chunkBlock
	calls  int
	held   strings.Builder // text held back for the format check

	// With web search, the text is kept to cite the pages found in it.
	cite  bool
	text  strings.Builder
	pages []SearchPage
	// custom names the custom tools, whose calls carry text input.
	custom map[string]bool
}

// Custom names the request's custom tools: their calls are streamed as
// custom calls, each input whole when the call is complete.
func (e *ChunkEncoder) Custom(names map[string]bool) { e.custom = names }

// Cite makes the encoder keep the answer's text and end it with the
// citations of the pages a web search found that the text names.
func (e *ChunkEncoder) Cite() { e.cite = true }

type chunkBlock struct {
	kind string
	call int  // tool call index
	args bool // arguments were sent
	// A custom tool's call gathers its arguments, to send its input whole.
	custom bool
	input  *strings.Builder
}

// NewChunkEncoder starts a response's encoder. With a format, text is held
// until the answer is complete and checked.
func NewChunkEncoder(id string, created int64, includeUsage bool, format *ResponseFormat) *ChunkEncoder {
	return &ChunkEncoder{id: id, created: created, includeUsage: includeUsage, format: format}
}

// Start writes the first chunk, which names the role, for the model that
// answers.
func (e *ChunkEncoder) Start(dst []byte, model string) []byte {
	e.prefix = append(e.prefix[:0], `{"id":`...)
	e.prefix = anthropic.AppendString(e.prefix, e.id)
	e.prefix = append(e.prefix, `,"object":"chat.completion.chunk","created":`...)
	e.prefix = strconv.AppendInt(e.prefix, e.created, 10)
	e.prefix = append(e.prefix, `,"model":`...)
	e.prefix = anthropic.AppendString(e.prefix, model)
	e.prefix = append(e.prefix, `,"system_fingerprint":null`...)
	return e.chunk(dst, []byte(`{"role":"assistant","content":""}`), "")
}

// BlockStart opens the block at index; a tool call is announced here.
func (e *ChunkEncoder) BlockStart(dst []byte, index int, block json.RawMessage) []byte {
	var b struct {
		Type string          `json:"type"`
		ID   json.RawMessage `json:"id"`
		Name json.RawMessage `json:"name"`
	}
	_ = json.Unmarshal(block, &b)
	for len(e.blocks) <= index {
		e.blocks = append(e.blocks, chunkBlock{})
	}
	e.blocks[index] = chunkBlock{kind: b.Type}
	if b.Type == anthropic.BlockWebSearchToolResult {
		e.pages = append(e.pages, searchPages(block)...)
	}
	if b.Type != anthropic.BlockToolUse {
		return dst
	}
	dst = e.releaseHeld(dst)
	call := e.calls
	e.calls++
	e.blocks[index].call = call
	var name string
	if json.Unmarshal(b.Name, &name) == nil && e.custom[name] {
		e.blocks[index].custom, e.blocks[index].input = true, &strings.Builder{}
		delta := e.toolCallHead(call)
		delta = append(delta, `,"id":`...)
		delta = append(delta, rawOr(b.ID, `""`)...)
		delta = append(delta, `,"type":"custom","custom":{"name":`...)
		delta = append(delta, b.Name...)
		delta = append(delta, `,"input":""}}]}`...)
		return e.chunk(dst, delta, "")
	}
	delta := e.toolCallHead(call)
	delta = append(delta, `,"id":`...)
	delta = append(delta, rawOr(b.ID, `""`)...)
	delta = append(delta, `,"type":"function","function":{"name":`...)
	delta = append(delta, rawOr(b.Name, `""`)...)
	delta = append(delta, `,"arguments":""}}]}`...)
	return e.chunk(dst, delta, "")
}

// BlockDelta writes a piece of the block at index.
func (e *ChunkEncoder) BlockDelta(dst []byte, index int, delta json.RawMessage) []byte {
	if index < 0 || index >= len(e.blocks) {
		return dst
	}
	if raw, ok := plainTextDelta(delta); ok && e.format == nil && !e.cite {
		return e.field(dst, `{"content":`, raw)
	}
	var d struct {
		Type        string          `json:"type"`
		Text        json.RawMessage `json:"text"`
		Thinking    json.RawMessage `json:"thinking"`
		PartialJSON json.RawMessage `json:"partial_json"`
	}
	if json.Unmarshal(delta, &d) != nil {
		return dst
	}
	switch d.Type {
	case "text_delta":
		if len(d.Text) == 0 {
			return dst
		}
		if e.format != nil || e.cite {
			var s string
			_ = json.Unmarshal(d.Text, &s)
			if e.cite {
				e.text.WriteString(s)
			}
			if e.format != nil {
				e.held.WriteString(s)
				return dst
			}
		}
		return e.field(dst, `{"content":`, d.Text)
	case "thinking_delta":
		if len(d.Thinking) == 0 {
			return dst
		}
		return e.field(dst, `{"reasoning_content":`, d.Thinking)
	case "input_json_delta":
		if len(d.PartialJSON) == 0 || string(d.PartialJSON) == `""` {
			return dst
		}
		b := &e.blocks[index]
		b.args = true
		if b.custom {
			var piece string
			_ = json.Unmarshal(d.PartialJSON, &piece)
			b.input.WriteString(piece)
			return dst
		}
		return e.arguments(dst, b.call, d.PartialJSON)
	}
	return dst
}

// BlockStop closes the block at index. A call whose arguments never came
// gets an empty object, so every client can parse them.
func (e *ChunkEncoder) BlockStop(dst []byte, index int) []byte {
	if index < 0 || index >= len(e.blocks) {
		return dst
	}
	b := &e.blocks[index]
	if b.custom {
		delta := e.toolCallHead(b.call)
		delta = append(delta, `,"custom":{"input":`...)
		delta = anthropic.AppendString(delta, customInput([]byte(b.input.String())))
		delta = append(delta, `}}]}`...)
		return e.chunk(dst, delta, "")
	}
	if b.kind == anthropic.BlockToolUse && !b.args {
		b.args = true
		return e.arguments(dst, b.call, json.RawMessage(`"{}"`))
	}
	return dst
}

// Finish writes the held text (checked against the format when the answer
// is complete), the finish reason, the usage when it was asked for, and the
// end marker. An answer that does not fit the format is a *FormatError
// and nothing is written.
func (e *ChunkEncoder) Finish(dst []byte, stopReason string, u anthropic.Usage) ([]byte, error) {
	finish := FinishReason(stopReason)
	if e.format != nil && finish == "stop" {
		checked, err := e.format.Check(e.held.String())
		if err != nil {
			return dst, err
		}
		e.held.Reset()
		e.held.WriteString(checked)
	}
	text := e.text.String()
	if e.format != nil && finish == "stop" {
		text = e.held.String() // the client gets the checked form
	}
	dst = e.releaseHeld(dst)
	if cs := citations(text, e.pages); e.cite && len(cs) > 0 {
		body, _ := json.Marshal(struct {
			Annotations []chatAnnotation `json:"annotations"`
		}{chatAnnotations(cs)})
		dst = e.chunk(dst, body, "")
	}
	dst = e.chunk(dst, []byte(`{}`), finish)
	if e.includeUsage {
		dst = append(dst, "data: "...)
		dst = append(dst, e.prefix...)
		dst = append(dst, `,"choices":[],"usage":`...)
		body, _ := json.Marshal(UsageOf(u))
		dst = append(dst, body...)
		dst = append(dst, "}\n\n"...)
	}
	return AppendDone(dst), nil
}

func (e *ChunkEncoder) releaseHeld(dst []byte) []byte {
	if e.held.Len() == 0 {
		return dst
	}
	s := anthropic.AppendString(nil, e.held.String())
	e.held.Reset()
	return e.field(dst, `{"content":`, s)
}

func (e *ChunkEncoder) toolCallHead(call int) []byte {
	delta := append([]byte(nil), `{"tool_calls":[{"index":`...)
	return strconv.AppendInt(delta, int64(call), 10)
}

func (e *ChunkEncoder) arguments(dst []byte, call int, piece json.RawMessage) []byte {
	delta := e.toolCallHead(call)
	delta = append(delta, `,"function":{"arguments":`...)
	delta = append(delta, piece...)
	delta = append(delta, `}}]}`...)
	return e.chunk(dst, delta, "")
}

// field writes a delta with one field whose value is a JSON string.
func (e *ChunkEncoder) field(dst []byte, open string, value json.RawMessage) []byte {
	dst = append(dst, "data: "...)
	dst = append(dst, e.prefix...)
	dst = append(dst, `,"choices":[{"index":0,"delta":`...)
	dst = append(dst, open...)
	dst = append(dst, value...)
	return append(dst, `},"logprobs":null,"finish_reason":null}]}`+"\n\n"...)
}

func (e *ChunkEncoder) chunk(dst []byte, delta []byte, finish string) []byte {
	dst = append(dst, "data: "...)
	dst = append(dst, e.prefix...)
	dst = append(dst, `,"choices":[{"index":0,"delta":`...)
	dst = append(dst, delta...)
	dst = append(dst, `,"logprobs":null,"finish_reason":`...)
	dst = appendNullable(dst, finish)
	return append(dst, "}]}\n\n"...)
}

// textDeltaPrefix is how the relay and the Messages API write a text
// delta: the hot path takes its text without decoding the object.
const textDeltaPrefix = `{"type":"text_delta","text":"`

// plainTextDelta returns the JSON string of a text delta written in the
// usual form, a string and nothing else; ok is false for any other form,
// which the caller decodes in full.
func plainTextDelta(delta json.RawMessage) (json.RawMessage, bool) {
	n := len(delta)
	if n < len(textDeltaPrefix)+2 || string(delta[:len(textDeltaPrefix)]) != textDeltaPrefix || delta[n-1] != '}' || delta[n-2] != '"' {
		return nil, false
	}
	raw := delta[len(textDeltaPrefix)-1 : n-1]
	// The string must end at its last quote: no unescaped quote inside.
	for i := 1; i < len(raw)-1; i++ {
		switch raw[i] {
		case '\\':
			if i++; i >= len(raw)-1 {
				return nil, false // the closing quote is escaped
			}
		case '"':
			return nil, false
		}
	}
	return raw, true
}

func rawOr(v json.RawMessage, def string) []byte {
	if len(v) == 0 {
		return []byte(def)
	}
	return v
}

// Fail appends the error chunk that ends a failed stream.
func (e *ChunkEncoder) Fail(dst []byte, status int, message string, retryAfter int) []byte {
	return AppendErrorChunk(dst, status, message, retryAfter)
}
