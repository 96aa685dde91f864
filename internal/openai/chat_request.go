package openai

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"

	"github.com/meridian-gw/meridian/internal/anthropic"
)

// Anthropic translates the request into the Messages API request the
// gateway runs:
//
//   - system and developer messages before the first user or assistant
//     message become the system prompt, in order; later ones stay in place
//     as system messages;
//   - an assistant message becomes its text in one block, then one tool_use
//     block per call, its arguments as the input;
//   - tool messages become tool_result blocks; consecutive user and tool
//     messages form one user message, so a batch of results travels
//     together and text beside them is steering;
//   - images become image blocks (base64 or URL sources);
//   - reasoning_effort turns on adaptive thinking at that effort ("none"
//     leaves it off); response_format adds its instruction to the system
//     prompt.
func (r *ChatRequest) Anthropic() *anthropic.MessagesRequest {
	out := &anthropic.MessagesRequest{
		Model:         r.Model,
		MaxTokens:     r.MaxTokens,
		Stream:        r.Stream,
		StopSequences: r.Stop,
	}
	leading := true
	for _, m := range r.Messages {
		switch m.Role {
		case RoleSystem, RoleDeveloper:
			if leading {
				for _, p := range m.Parts {
					out.System = append(out.System, p.Text)
				}
				continue
			}
			out.Messages = append(out.Messages, anthropic.Message{Role: anthropic.RoleSystem, Content: partBlocks(m.Parts)})
		case RoleUser:
			out.Messages = appendTo(out.Messages, anthropic.RoleUser, partBlocks(m.Parts)...)
		case RoleTool:
			out.Messages = appendTo(out.Messages, anthropic.RoleUser, toolResultBlock(m))
		case RoleAssistant:
			out.Messages = appendTo(out.Messages, anthropic.RoleAssistant, assistantBlocks(m)...)
		}
		leading = false
	}
	out.Format = r.Format.anthropic()
	out.MediaAt = r.MediaAt
	for _, f := range r.Tools {
		out.Tools = append(out.Tools, toolJSON(f))
	}
	if r.WebSearch {
		out.Tools = append(out.Tools, json.RawMessage(webSearchTool))
	}
	switch r.ReasoningEffort {
	case "", "none":
	case "minimal":
		out.Thinking, out.Effort = &anthropic.Thinking{Type: "adaptive"}, "low"
	default:
		out.Thinking, out.Effort = &anthropic.Thinking{Type: "adaptive"}, r.ReasoningEffort
	}
	return out
}

// Echo is an answer as a chat client sends it back as history: all its
// text in one block (the client concatenates what it received), then its
// tool calls. With a response format the text is the checked form the
// client got. Lineage records the answer in this form, so the client's next
// request proves the conversation continues.
func (r *ChatRequest) Echo(m anthropic.Message) anthropic.Message {
	var text strings.Builder
	var calls []anthropic.ContentBlock
	for _, b := range m.Content {
		switch b.Type {
		case anthropic.BlockText:
			text.WriteString(b.Text)
		case anthropic.BlockToolUse:
			if r.Customs()[b.Name] {
				// The client echoes a custom call's input alone.
				b = toolUseBlock(b.ID, b.Name, customArguments(customInput(b.Input)))
			}
			calls = append(calls, b)
		}
	}
	s := text.String()
	if r.Format != nil {
		s = Unfence(s)
	}
	out := anthropic.Message{Role: m.Role}
	if s != "" {
		out.Content = append(out.Content, textBlock(s))
	}
	out.Content = append(out.Content, calls...)
	return out
}

// appendTo adds blocks to the last message when it has the same role (the
// API alternates roles), else as a new message.
func appendTo(msgs []anthropic.Message, role string, blocks ...anthropic.ContentBlock) []anthropic.Message {
	if n := len(msgs); n > 0 && msgs[n-1].Role == role {
		msgs[n-1].Content = append(msgs[n-1].Content, blocks...)
		return msgs
	}
	return append(msgs, anthropic.Message{Role: role, Content: blocks})
}

func partBlocks(parts []Part) []anthropic.ContentBlock {
	out := make([]anthropic.ContentBlock, 0, len(parts))
	for _, p := range parts {
		switch p.Type {
		case PartText:
			out = append(out, textBlock(p.Text))
		case PartImage:
			out = append(out, imageBlock(p))
		case PartDocument:
			out = append(out, documentBlock(p))
		}
	}
	return out
}

// documentBlock is an attached file as a Messages document: a PDF as
// base64, plain text as its text.
func documentBlock(p Part) anthropic.ContentBlock {
	src := map[string]string{"type": "base64", "media_type": p.MediaType, "data": p.Data}
	if p.MediaType == "text/plain" {
		text, _ := base64.StdEncoding.DecodeString(p.Data) // checked when decoded
		src = map[string]string{"type": "text", "media_type": "text/plain", "data": string(text)}
	}
	srcRaw, _ := json.Marshal(src)
	raw, _ := json.Marshal(struct {
		Type   string          `json:"type"`
		Source json.RawMessage `json:"source"`
		Title  string          `json:"title,omitempty"`
	}{anthropic.BlockDocument, srcRaw, p.Text})
	return anthropic.ContentBlock{Type: anthropic.BlockDocument, Source: srcRaw, Title: p.Text, Raw: raw}
}

func assistantBlocks(m ChatMessage) []anthropic.ContentBlock {
	var text strings.Builder
	for _, p := range m.Parts {
		text.WriteString(p.Text)
	}
	var out []anthropic.ContentBlock
	if text.Len() > 0 {
		out = append(out, textBlock(text.String()))
	}
	for _, c := range m.ToolCalls {
		out = append(out, toolUseBlock(c.ID, c.Name, c.Arguments))
	}
	return out
}

func toolResultBlock(m ChatMessage) anthropic.ContentBlock {
	content := partBlocks(m.Parts)
	raws := make([]json.RawMessage, len(content))
	for i, c := range content {
		raws[i] = c.Raw
	}
	raw, _ := json.Marshal(struct {
		Type      string            `json:"type"`
		ToolUseID string            `json:"tool_use_id"`
		Content   []json.RawMessage `json:"content"`
	}{anthropic.BlockToolResult, m.ToolCallID, raws})
	return anthropic.ContentBlock{Type: anthropic.BlockToolResult, ToolUseID: m.ToolCallID, Content: content, Raw: raw}
}

func textBlock(s string) anthropic.ContentBlock {
	return anthropic.ContentBlock{Type: anthropic.BlockText, Text: s, Raw: anthropic.TextBlock(s)}
}

func imageBlock(p Part) anthropic.ContentBlock {
	type source struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type,omitempty"`
		Data      string `json:"data,omitempty"`
		URL       string `json:"url,omitempty"`
	}
	src := source{Type: "base64", MediaType: p.MediaType, Data: p.Data}
	if p.URL != "" {
		src = source{Type: "url", URL: p.URL}
	}
	srcRaw, _ := json.Marshal(src)
	raw, _ := json.Marshal(struct {
		Type   string          `json:"type"`
		Source json.RawMessage `json:"source"`
	}{anthropic.BlockImage, srcRaw})
	return anthropic.ContentBlock{Type: anthropic.BlockImage, Source: srcRaw, Raw: raw}
}

func toolJSON(f Function) json.RawMessage {
	schema := json.RawMessage(f.Parameters)
	if len(schema) == 0 {
		schema = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	raw, _ := json.Marshal(struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		InputSchema json.RawMessage `json:"input_schema"`
	}{f.Name, f.Description, schema})
	return raw
}

func compact(raw []byte) json.RawMessage {
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return raw
	}
	return buf.Bytes()
}
