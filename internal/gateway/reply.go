package gateway

import (
	"encoding/json"
	"strings"

	"github.com/meridian-gw/meridian/internal/anthropic"
)

// reply accumulates the answer exactly as the client receives it, block by
// block: it becomes the body of a JSON response and the assistant message
// whose digest proves, on the next request, that the client echoes what
// the session holds.
type reply struct {
	blocks []*replyBlock // by client index
}

type replyBlock struct {
	kind      string
	start     json.RawMessage
	text      strings.Builder // text or thinking
	signature strings.Builder
	input     []byte // tool input JSON, from its deltas
	abandoned bool
}

func (r *reply) startBlock(idx int, kind string, start json.RawMessage) {
	for len(r.blocks) <= idx {
		r.blocks = append(r.blocks, nil)
	}
	b := &replyBlock{kind: kind, start: start}
	var initial struct {
		Text     string `json:"text"`
		Thinking string `json:"thinking"`
	}
	if json.Unmarshal(start, &initial) == nil {
		b.text.WriteString(initial.Text + initial.Thinking)
	}
	r.blocks[idx] = b
}

func (r *reply) block(idx int) *replyBlock {
	if idx < 0 || idx >= len(r.blocks) {
		return nil
	}
	return r.blocks[idx]
}

func (r *reply) addText(idx int, s string) {
	if b := r.block(idx); b != nil {
		b.text.WriteString(s)
	}
}

// addDelta records a delta other than text.
func (r *reply) addDelta(idx int, delta json.RawMessage) {
	b := r.block(idx)
	if b == nil {
		return
	}
	var d struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		Thinking    string `json:"thinking"`
		Signature   string `json:"signature"`
		PartialJSON string `json:"partial_json"`
	}
	if json.Unmarshal(delta, &d) != nil {
		return
	}
	switch d.Type {
	case "text_delta":
		b.text.WriteString(d.Text)
	case "thinking_delta":
		b.text.WriteString(d.Thinking)
	case "signature_delta":
		b.signature.WriteString(d.Signature)
	case "input_json_delta":
		b.input = append(b.input, d.PartialJSON...)
	}
}

func (r *reply) abandon(idx int) {
	if b := r.block(idx); b != nil {
		b.abandoned = true
	}
}

// content renders the blocks the client keeps.
func (r *reply) content() []json.RawMessage {
	out := make([]json.RawMessage, 0, len(r.blocks))
	for _, b := range r.blocks {
		if b != nil && !b.abandoned {
			out = append(out, b.render())
		}
	}
	return out
}

// message is the reply as an assistant message of the conversation.
func (r *reply) message() anthropic.Message {
	m := anthropic.Message{Role: anthropic.RoleAssistant}
	for _, raw := range r.content() {
		if b, err := anthropic.DecodeContentBlock(raw); err == nil {
			m.Content = append(m.Content, b)
		}
	}
	return m
}

func (b *replyBlock) render() json.RawMessage {
	var v any
	switch b.kind {
	case anthropic.BlockText:
		v = struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}{b.kind, b.text.String()}
	case anthropic.BlockThinking:
		v = struct {
			Type      string `json:"type"`
			Thinking  string `json:"thinking"`
			Signature string `json:"signature"`
		}{b.kind, b.text.String(), b.signature.String()}
	default:
		if len(b.input) == 0 {
			return b.start
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(b.start, &m) != nil || !json.Valid(b.input) {
			return b.start
		}
		m["input"] = b.input
		v = m
	}
	out, err := json.Marshal(v)
	if err != nil {
		return b.start
	}
	return out
}
