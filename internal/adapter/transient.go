package adapter

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/meridian-gw/meridian/internal/anthropic"
)

// Transient is an Adapter whose client puts per-turn blocks into its user
// messages — hook output made afresh for every turn — that are no part of
// the conversation it continues. Lineage leaves them out; the CLI still
// gets them.
type Transient interface {
	Transient(b anthropic.ContentBlock) bool
}

// TransientOf is an adapter's rule for its client's per-turn blocks, nil
// when it has none.
func TransientOf(a Adapter) Transient {
	tr, _ := a.(Transient)
	return tr
}

// Durable returns msgs as lineage compares them: the per-turn blocks tr
// recognises left out of the user messages that keep a block of their own
// besides them. A message of such blocks only stays whole, and so do the
// assistant's messages: a lookalike there is the model's own text. msgs
// itself is never changed; with nothing left out (or tr nil) it is
// returned as it is.
func Durable(tr Transient, msgs []anthropic.Message) []anthropic.Message {
	if tr == nil {
		return msgs
	}
	var out []anthropic.Message
	for i, m := range msgs {
		kept, left := DurableBlocks(tr, m)
		if !left {
			if out != nil {
				out = append(out, m)
			}
			continue
		}
		if out == nil {
			out = append(make([]anthropic.Message, 0, len(msgs)), msgs[:i]...)
		}
		out = append(out, anthropic.Message{Role: m.Role, Content: kept})
	}
	if out == nil {
		return msgs
	}
	return out
}

// DurableBlocks are m's blocks as lineage counts them, and whether any
// was left out.
func DurableBlocks(tr Transient, m anthropic.Message) ([]anthropic.ContentBlock, bool) {
	if tr == nil || m.Role != anthropic.RoleUser {
		return m.Content, false
	}
	var kept []anthropic.ContentBlock
	for _, b := range m.Content {
		if !tr.Transient(b) {
			kept = append(kept, b)
		}
	}
	if len(kept) == len(m.Content) || len(kept) == 0 {
		return m.Content, false
	}
	return kept, true
}

// Transient implements Transient: OpenCode's user-prompt-submit-hook
// envelopes. They carry the context a UserPromptSubmit hook added this
// turn, or its control fields, and change every turn.
func (openCode) Transient(b anthropic.ContentBlock) bool { return hookEnvelope(b) }

const (
	envelopeOpen  = "<user-prompt-submit-hook>"
	envelopeClose = "</user-prompt-submit-hook>"
)

// hookControl are the fields a hook's JSON output may hold beside its
// event's own (hookSpecificOutput).
var hookControl = map[string]bool{
	"continue": true, "suppressOutput": true, "stopReason": true, "decision": true, "reason": true, "systemMessage": true,
}

// hookEnvelope recognises a complete envelope and nothing else: a text
// block that is the envelope alone (no prose around it) holding a JSON
// object of a hook's known output fields, its hookSpecificOutput for
// UserPromptSubmit only. Anything unknown or malformed is the user's.
func hookEnvelope(b anthropic.ContentBlock) bool {
	if b.Type != anthropic.BlockText {
		return false
	}
	text := strings.TrimSpace(b.Text)
	inner, ok := strings.CutPrefix(text, envelopeOpen)
	if !ok {
		return false
	}
	if inner, ok = strings.CutSuffix(inner, envelopeClose); !ok {
		return false
	}
	var fields map[string]json.RawMessage
	dec := json.NewDecoder(strings.NewReader(inner))
	if dec.Decode(&fields) != nil || dec.More() || len(fields) == 0 {
		return false
	}
	for k, v := range fields {
		switch {
		case k == "hookSpecificOutput":
			if !userPromptSubmitOutput(v) {
				return false
			}
		case !hookControl[k]:
			return false
		}
	}
	return true
}

// userPromptSubmitOutput is a hookSpecificOutput of the UserPromptSubmit
// event: its name and the context it adds.
func userPromptSubmitOutput(raw json.RawMessage) bool {
	var out map[string]json.RawMessage
	if json.Unmarshal(raw, &out) != nil || !bytes.Equal(bytes.TrimSpace(out["hookEventName"]), []byte(`"UserPromptSubmit"`)) {
		return false
	}
	for k := range out {
		if k != "hookEventName" && k != "additionalContext" {
			return false
		}
	}
	return true
}
