// Package replay renders a client's conversation into the single user
// message that carries it into a fresh claude session. It is pure.
//
// A fresh CLI session holds no history, and the CLI accepts only user
// messages as input, so earlier turns travel as a transcript inside the
// first message: text in tagged sections, images and documents as real
// blocks at their place in the transcript, tool calls and results with their
// ids, names, arguments and error flags. Nothing is dropped except what the
// Messages API itself ignores on later turns: earlier thinking blocks and
// cache_control hints.
package replay

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/meridian-gw/meridian/internal/anthropic"
)

// Render returns the content blocks of the message that continues msgs in a
// session that has seen none of them. The last non-system message must be
// the user's; its blocks are sent as they are, after a transcript of
// everything before it.
func Render(msgs []anthropic.Message) []json.RawMessage {
	last := len(msgs) - 1
	for last >= 0 && msgs[last].Role == anthropic.RoleSystem {
		last--
	}
	var r renderer
	history := msgs[:max(last, 0)]
	trailing := msgs[last+1:] // system messages after the final user message
	if len(history) > 0 || len(trailing) > 0 {
		r.text("<conversation_history>\nThe conversation so far, oldest first. Continue it by answering the final user message, which follows the history.\n")
		for _, m := range history {
			r.message(m)
		}
		for _, m := range trailing {
			r.message(m)
		}
		r.text("</conversation_history>\n\n")
	}
	if last >= 0 {
		r.live(msgs[last].Content)
	}
	return r.finish()
}

type renderer struct {
	out []json.RawMessage
	buf strings.Builder // pending text, merged into one block
}

func (r *renderer) text(s string) { r.buf.WriteString(s) }

func (r *renderer) flush() {
	if strings.TrimSpace(r.buf.String()) != "" {
		r.out = append(r.out, anthropic.TextBlock(r.buf.String()))
	}
	r.buf.Reset()
}

func (r *renderer) block(b json.RawMessage) {
	r.flush()
	r.out = append(r.out, b)
}

func (r *renderer) finish() []json.RawMessage {
	r.flush()
	if len(r.out) == 0 {
		// The API refuses an empty message; an empty prompt says so plainly.
		r.out = append(r.out, anthropic.TextBlock("(empty message)"))
	}
	return r.out
}

// message renders one earlier turn of the transcript.
func (r *renderer) message(m anthropic.Message) {
	r.text("<message role=\"" + m.Role + "\">\n")
	for _, b := range m.Content {
		r.historyBlock(b)
	}
	r.text("</message>\n")
}

func (r *renderer) historyBlock(b anthropic.ContentBlock) {
	switch b.Type {
	case anthropic.BlockText:
		r.text(b.Text)
		r.text("\n")
	case anthropic.BlockImage, anthropic.BlockDocument:
		r.block(withoutCacheControl(b.Raw))
	case anthropic.BlockToolUse:
		r.text("<tool_use id=\"" + attr(b.ID) + "\" name=\"" + attr(b.Name) + "\">")
		r.text(string(compact(b.Input)))
		r.text("</tool_use>\n")
	case anthropic.BlockToolResult:
		r.toolResult(b)
	case anthropic.BlockThinking, anthropic.BlockRedactedThinking:
		// The Messages API drops earlier turns' thinking from the context too.
	default:
		r.text("<block type=\"" + attr(b.Type) + "\">")
		r.text(string(withoutCacheControl(b.Raw)))
		r.text("</block>\n")
	}
}

// live renders the final user message: its blocks go as they are, except
// tool results, which the CLI cannot take as input and so become text.
func (r *renderer) live(blocks []anthropic.ContentBlock) {
	for _, b := range blocks {
		switch b.Type {
		case anthropic.BlockText:
			r.text(b.Text)
		case anthropic.BlockToolResult:
			r.flush()
			r.toolResult(b)
			r.flush()
		case anthropic.BlockThinking, anthropic.BlockRedactedThinking:
		case anthropic.BlockToolUse:
			r.historyBlock(b)
		default:
			r.block(withoutCacheControl(b.Raw))
		}
	}
}

func (r *renderer) toolResult(b anthropic.ContentBlock) {
	r.text("<tool_result tool_use_id=\"" + attr(b.ToolUseID) + "\"")
	if b.IsError {
		r.text(" is_error=\"true\"")
	}
	r.text(">\n")
	for _, c := range b.Content {
		r.historyBlock(c)
	}
	r.text("</tool_result>\n")
}

// withoutCacheControl drops the block's cache_control: the CLI places its
// own breakpoints and the API allows only four.
func withoutCacheControl(raw json.RawMessage) json.RawMessage {
	if !bytes.Contains(raw, []byte(`"cache_control"`)) {
		return raw
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return raw
	}
	delete(m, "cache_control")
	out, err := json.Marshal(m)
	if err != nil {
		return raw
	}
	return out
}

func compact(raw json.RawMessage) []byte {
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return raw
	}
	return buf.Bytes()
}

// attr keeps a value from closing the tag it is written into.
func attr(s string) string {
	return strings.NewReplacer(`"`, "&quot;", "<", "&lt;", ">", "&gt;").Replace(s)
}
