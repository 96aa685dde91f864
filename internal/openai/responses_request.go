package openai

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/meridian-gw/meridian/internal/anthropic"
	"github.com/meridian-gw/meridian/internal/jsonbody"
)

// History is what a request continues beyond its own input: the items of
// the previous responses (oldest first), how to resolve an item_reference,
// and how to open sealed reasoning. Any part may be nil.
type History struct {
	Items   []Item
	Resolve func(id string) (Item, bool)
	Sealer  *Sealer
}

// Anthropic translates the request, after its history, into the Messages
// API request the gateway runs:
//
//   - instructions, then system and developer messages before the
//     conversation starts, become the system prompt; later ones stay in
//     place as system notes;
//   - user messages become user content (text and images);
//   - assistant messages, function calls and reasoning items that follow
//     each other form one assistant message: text blocks, tool_use blocks
//     (a namespace's function under its flat name), and thinking restored
//     from reasoning this gateway sealed (anything else is ignored);
//   - function_call_output items become tool_result blocks; with the user
//     messages beside them they form one user message;
//   - reasoning turns on adaptive thinking at its effort; text.format adds
//     its instruction to the system prompt.
//
// It checks what only the whole history shows: every output answers a
// call that is still open, references resolve, and the model's turn comes
// next. Errors name the input item at fault.
func (r *ResponsesRequest) Anthropic(h History) (*anthropic.MessagesRequest, error) {
	if err := r.Resolve(h); err != nil {
		return nil, err
	}
	input := r.Input
	if err := checkTurns(h.Items, input); err != nil {
		return nil, err
	}
	out := &anthropic.MessagesRequest{Model: r.Model, MaxTokens: r.MaxTokens, Stream: r.Stream, MediaAt: r.MediaAt}
	if r.Instructions != "" {
		out.System = append(out.System, r.Instructions)
	}
	leading := true
	for _, it := range slices.Concat(h.Items, input) {
		switch {
		case it.Type == ItemMessage && (it.Role == RoleSystem || it.Role == RoleDeveloper):
			if leading {
				for _, p := range it.Parts {
					out.System = append(out.System, p.Text)
				}
				continue
			}
			out.Messages = append(out.Messages, anthropic.Message{Role: anthropic.RoleSystem, Content: partBlocks(it.Parts)})
		case it.Type == ItemMessage && it.Role == RoleUser:
			out.Messages = appendTo(out.Messages, anthropic.RoleUser, partBlocks(it.Parts)...)
		case it.Type == ItemMessage:
			var text strings.Builder
			for _, p := range it.Parts {
				text.WriteString(p.Text)
			}
			if text.Len() > 0 {
				out.Messages = appendTo(out.Messages, anthropic.RoleAssistant, textBlock(text.String()))
			}
		case it.Type == ItemFunctionCall:
			out.Messages = appendTo(out.Messages, anthropic.RoleAssistant, toolUseBlock(it.CallID, FlatName(it.Namespace, it.Name), it.Arguments))
		case it.Type == ItemFunctionCallOutput:
			out.Messages = appendTo(out.Messages, anthropic.RoleUser, toolResultBlock(ChatMessage{ToolCallID: it.CallID, Parts: it.Parts}))
		case it.Type == ItemReasoning:
			if b, ok := thinkingBlock(h.Sealer, it.Encrypted); ok {
				out.Messages = appendTo(out.Messages, anthropic.RoleAssistant, b)
			}
			continue // reasoning alone does not start the conversation
		}
		leading = false
	}
	out.Format = r.Format.anthropic()
	for _, f := range r.Tools {
		out.Tools = append(out.Tools, toolJSON(f))
	}
	if ws := r.WebSearch; ws != nil {
		tool, _ := json.Marshal(struct {
			Type           string   `json:"type"`
			Name           string   `json:"name"`
			AllowedDomains []string `json:"allowed_domains,omitempty"`
		}{"web_search_20250305", "web_search", ws.AllowedDomains})
		out.Tools = append(out.Tools, tool)
	}
	if r.Reasoning && r.ReasoningEffort != "none" {
		out.Thinking = &anthropic.Thinking{Type: "adaptive"}
		out.Effort = r.ReasoningEffort
		if out.Effort == "minimal" {
			out.Effort = "low"
		}
	}
	return out, nil
}

// Resolve replaces the input's item references by the items they name.
func (r *ResponsesRequest) Resolve(h History) error {
	for i, it := range r.Input {
		if it.Type != ItemReference {
			continue
		}
		var ok bool
		if h.Resolve != nil {
			it, ok = h.Resolve(it.Ref)
		}
		if !ok || it.Type == ItemReference {
			return jsonbody.Errorf(jsonbody.Index("input", i)+".id", "item_reference %q names no stored item of this conversation", r.Input[i].Ref)
		}
		r.Input[i] = it
	}
	return nil
}

// checkTurns checks the input against its history: each output answers a
// call made earlier and not answered yet, and the conversation ends where
// the model speaks next.
func checkTurns(history, input []Item) error {
	open := map[string]bool{}
	for _, it := range history {
		track(open, it)
	}
	for i, it := range input {
		path := jsonbody.Index("input", i)
		if it.Type == ItemFunctionCallOutput && !open[it.CallID] {
			return jsonbody.Errorf(path+".call_id", "%q answers no open function_call of this conversation", it.CallID)
		}
		track(open, it)
	}
	for i := len(input) - 1; i >= 0; i-- {
		it := input[i]
		switch {
		case it.Type == ItemReasoning, it.Type == ItemMessage && (it.Role == RoleSystem || it.Role == RoleDeveloper):
			continue
		case it.Type == ItemMessage && it.Role == RoleUser, it.Type == ItemFunctionCallOutput:
			return nil
		case it.Type == ItemFunctionCall:
			return jsonbody.Errorf(jsonbody.Index("input", i), "the input ends with a function_call: send its function_call_output for the model to go on")
		default:
			return jsonbody.Errorf(jsonbody.Index("input", i)+".role", "the input ends with the assistant's message; continuing the assistant's own message is not supported")
		}
	}
	return jsonbody.Errorf("input", "no user message or function_call_output for the model to answer")
}

func track(open map[string]bool, it Item) {
	switch it.Type {
	case ItemFunctionCall:
		open[it.CallID] = true
	case ItemFunctionCallOutput:
		delete(open, it.CallID)
	}
}

// Echo is an answer as a Responses client sends it back as history: one
// message item per text block, function calls, reasoning. Text that did
// not reach the client (empty) is left out; with a text format the text is
// the checked form the client got.
func (r *ResponsesRequest) Echo(m anthropic.Message) anthropic.Message {
	out := anthropic.Message{Role: m.Role}
	for _, b := range m.Content {
		if b.Type == anthropic.BlockServerToolUse || b.Type == anthropic.BlockWebSearchToolResult {
			continue // a client's web_search_call items add nothing to its history
		}
		if b.Type == anthropic.BlockText {
			text := b.Text
			if r.Format != nil {
				text = Unfence(text)
			}
			if text == "" {
				continue
			}
			b = textBlock(text)
		}
		if b.Type == anthropic.BlockToolUse && customs(r.Tools)[b.Name] {
			// The client echoes a custom call's input alone.
			b = toolUseBlock(b.ID, b.Name, customArguments(customInput(b.Input)))
		}
		out.Content = append(out.Content, b)
	}
	return out
}

func toolUseBlock(id, name, arguments string) anthropic.ContentBlock {
	input := compact([]byte(arguments))
	raw, _ := json.Marshal(struct {
		Type  string          `json:"type"`
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	}{anthropic.BlockToolUse, id, name, input})
	return anthropic.ContentBlock{Type: anthropic.BlockToolUse, ID: id, Name: name, Input: input, Raw: raw}
}

// thinkingBlock restores the thinking a reasoning item carries, when this
// gateway sealed it.
func thinkingBlock(s *Sealer, encrypted string) (anthropic.ContentBlock, bool) {
	if s == nil || encrypted == "" {
		return anthropic.ContentBlock{}, false
	}
	t, ok := s.Open(encrypted)
	if !ok {
		return anthropic.ContentBlock{}, false
	}
	if t.Redacted != "" {
		raw, _ := json.Marshal(struct {
			Type string `json:"type"`
			Data string `json:"data"`
		}{anthropic.BlockRedactedThinking, t.Redacted})
		return anthropic.ContentBlock{Type: anthropic.BlockRedactedThinking, Data: t.Redacted, Raw: raw}, true
	}
	raw, _ := json.Marshal(struct {
		Type      string `json:"type"`
		Thinking  string `json:"thinking"`
		Signature string `json:"signature"`
	}{anthropic.BlockThinking, t.Thinking, t.Signature})
	return anthropic.ContentBlock{Type: anthropic.BlockThinking, Thinking: t.Thinking, Signature: t.Signature, Raw: raw}, true
}
