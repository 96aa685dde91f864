package anthropic

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/meridian-gw/meridian/internal/jsonbody"
)

// RequestError is a client mistake in a request body, naming the JSON path
// of the offending value.
type RequestError = jsonbody.Error

// Limits that keep a single request from making the decoder do unbounded
// work beyond reading its body.
const (
	maxMessages      = 100_000
	maxBlockDepth    = 4 // tool_result content may nest blocks; nothing deeper
	maxStopSequences = 16
)

// DecodeMessagesRequest parses and validates a Messages API request body;
// count_tokens bodies share the shape. Unknown top-level fields are ignored,
// as clients send many extensions. Every error is a *RequestError.
func DecodeMessagesRequest(body []byte) (*MessagesRequest, error) {
	top, err := jsonbody.Top(body)
	if err != nil {
		return nil, err
	}
	req := &MessagesRequest{}
	if req.Model, err = jsonbody.RequiredString(top, "", "model"); err != nil {
		return nil, err
	}
	if req.Model == "" {
		return nil, &RequestError{Field: "model", Message: "must not be empty"}
	}
	if req.Messages, err = decodeMessages(top["messages"]); err != nil {
		return nil, err
	}
	req.MediaAt = firstMedia(req.Messages)
	if req.System, err = decodeSystem(top["system"]); err != nil {
		return nil, err
	}
	if v, ok := jsonbody.Present(top, "max_tokens"); ok {
		if req.MaxTokens, err = jsonbody.Int("max_tokens", v); err != nil {
			return nil, err
		}
		if req.MaxTokens < 1 {
			return nil, &RequestError{Field: "max_tokens", Message: "must be at least 1"}
		}
	}
	if v, ok := jsonbody.Present(top, "stream"); ok {
		if err := jsonbody.As("stream", v, &req.Stream, "a boolean"); err != nil {
			return nil, err
		}
	}
	if v, ok := jsonbody.Present(top, "stop_sequences"); ok {
		if err := jsonbody.As("stop_sequences", v, &req.StopSequences, "an array of strings"); err != nil {
			return nil, err
		}
		if len(req.StopSequences) > maxStopSequences {
			return nil, &RequestError{Field: "stop_sequences", Message: fmt.Sprintf("at most %d stop sequences are allowed", maxStopSequences)}
		}
		for i, s := range req.StopSequences {
			if s == "" {
				return nil, &RequestError{Field: "stop_sequences." + strconv.Itoa(i), Message: "must not be empty"}
			}
		}
	}
	for _, f := range []struct {
		name string
		dst  **float64
	}{{"temperature", &req.Temperature}, {"top_p", &req.TopP}} {
		if v, ok := jsonbody.Present(top, f.name); ok {
			var n float64
			if err := jsonbody.As(f.name, v, &n, "a number"); err != nil {
				return nil, err
			}
			*f.dst = &n
		}
	}
	if v, ok := jsonbody.Present(top, "top_k"); ok {
		n, err := jsonbody.Int("top_k", v)
		if err != nil {
			return nil, err
		}
		req.TopK = &n
	}
	if v, ok := jsonbody.Present(top, "metadata"); ok {
		if _, err := jsonbody.DecodeObject("metadata", v); err != nil {
			return nil, err
		}
		req.Metadata = v
	}
	if v, ok := jsonbody.Present(top, "thinking"); ok {
		if req.Thinking, err = decodeThinking(v); err != nil {
			return nil, err
		}
	}
	if v, ok := jsonbody.Present(top, "tools"); ok {
		if req.Tools, err = decodeTools(v); err != nil {
			return nil, err
		}
	}
	if v, ok := jsonbody.Present(top, "tool_choice"); ok {
		tc, err := jsonbody.DecodeObject("tool_choice", v)
		if err != nil {
			return nil, err
		}
		if _, err := jsonbody.RequiredString(tc, "tool_choice", "type"); err != nil {
			return nil, err
		}
		req.ToolChoice = v
	}
	if v, ok := jsonbody.Present(top, "output_config"); ok {
		oc, err := jsonbody.DecodeObject("output_config", v)
		if err != nil {
			return nil, err
		}
		if e, ok := jsonbody.Present(oc, "effort"); ok {
			if err := jsonbody.As("output_config.effort", e, &req.Effort, "a string"); err != nil {
				return nil, err
			}
		}
		if f, ok := jsonbody.Present(oc, "format"); ok && !jsonbody.IsAbsent(f) {
			if req.Format, err = decodeOutputFormat(f); err != nil {
				return nil, err
			}
		}
	}
	return req, nil
}

// decodeOutputFormat reads output_config.format: a JSON schema the answer
// must fit.
func decodeOutputFormat(raw json.RawMessage) (*OutputFormat, error) {
	const path = "output_config.format"
	obj, err := jsonbody.DecodeObject(path, raw)
	if err != nil {
		return nil, err
	}
	typ, err := jsonbody.RequiredString(obj, path, "type")
	if err != nil {
		return nil, err
	}
	if typ != "json_schema" {
		return nil, &RequestError{Field: path + ".type", Message: fmt.Sprintf("must be \"json_schema\", got %q", typ)}
	}
	schema, ok := jsonbody.Present(obj, "schema")
	if !ok {
		return nil, &RequestError{Field: path + ".schema", Message: "Field required"}
	}
	if _, err := jsonbody.DecodeObject(path+".schema", schema); err != nil {
		return nil, err
	}
	return &OutputFormat{Schema: schema, Field: path}, nil
}

func decodeMessages(raw json.RawMessage) ([]Message, error) {
	if jsonbody.IsAbsent(raw) {
		return nil, &RequestError{Field: "messages", Message: "Field required"}
	}
	items, err := jsonbody.DecodeArray("messages", raw)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return nil, &RequestError{Field: "messages", Message: "must contain at least one message"}
	}
	if len(items) > maxMessages {
		return nil, &RequestError{Field: "messages", Message: fmt.Sprintf("at most %d messages are allowed", maxMessages)}
	}
	msgs := make([]Message, len(items))
	for i, item := range items {
		path := "messages." + strconv.Itoa(i)
		obj, err := jsonbody.DecodeObject(path, item)
		if err != nil {
			return nil, err
		}
		role, err := jsonbody.RequiredString(obj, path, "role")
		if err != nil {
			return nil, err
		}
		switch role {
		case RoleUser, RoleAssistant, RoleSystem:
		default:
			return nil, &RequestError{Field: path + ".role", Message: fmt.Sprintf("must be \"user\" or \"assistant\", got %q", role)}
		}
		content, ok := jsonbody.Present(obj, "content")
		if !ok {
			return nil, &RequestError{Field: path + ".content", Message: "Field required"}
		}
		blocks, err := decodeContent(path+".content", content, 0)
		if err != nil {
			return nil, err
		}
		msgs[i] = Message{Role: role, Content: blocks}
	}
	return msgs, nil
}

// decodeContent accepts a string (one text block) or an array of blocks.
func decodeContent(path string, raw json.RawMessage, depth int) ([]ContentBlock, error) {
	if depth > maxBlockDepth {
		return nil, &RequestError{Field: path, Message: "content is nested too deeply"}
	}
	if s, ok, err := jsonbody.StringValue(path, raw); ok || err != nil {
		if err != nil {
			return nil, err
		}
		return []ContentBlock{{Type: BlockText, Text: s, Raw: TextBlock(s)}}, nil
	}
	items, err := jsonbody.DecodeArray(path, raw)
	if err != nil {
		return nil, &RequestError{Field: path, Message: "expected a string or an array of content blocks"}
	}
	blocks := make([]ContentBlock, len(items))
	for i, item := range items {
		b, err := decodeBlock(path+"."+strconv.Itoa(i), item, depth)
		if err != nil {
			return nil, err
		}
		blocks[i] = b
	}
	return blocks, nil
}

// DecodeContentBlock parses and validates one content block.
func DecodeContentBlock(raw json.RawMessage) (ContentBlock, error) {
	return decodeBlock("content", raw, 0)
}

func decodeBlock(path string, raw json.RawMessage, depth int) (ContentBlock, error) {
	obj, err := jsonbody.DecodeObject(path, raw)
	if err != nil {
		return ContentBlock{}, err
	}
	typ, err := jsonbody.RequiredString(obj, path, "type")
	if err != nil {
		return ContentBlock{}, err
	}
	if typ == "" {
		return ContentBlock{}, &RequestError{Field: path + ".type", Message: "must not be empty"}
	}
	b := ContentBlock{Type: typ, Raw: raw}
	switch typ {
	case BlockText:
		b.Text, err = jsonbody.RequiredString(obj, path, "text")
	case BlockImage, BlockDocument:
		b.Source, err = requiredSource(obj, path)
		if err == nil && typ == BlockDocument {
			b.Title, err = jsonbody.OptionalString(obj, path, "title")
		}
	case BlockToolUse, BlockServerToolUse:
		if b.ID, err = jsonbody.RequiredString(obj, path, "id"); err != nil {
			break
		}
		if b.Name, err = jsonbody.RequiredString(obj, path, "name"); err != nil {
			break
		}
		in, ok := jsonbody.Present(obj, "input")
		if !ok {
			in = json.RawMessage(`{}`)
		} else if _, err = jsonbody.DecodeObject(path+".input", in); err != nil {
			break
		}
		b.Input = in
	case BlockToolResult:
		if b.ToolUseID, err = jsonbody.RequiredString(obj, path, "tool_use_id"); err != nil {
			break
		}
		if c, ok := jsonbody.Present(obj, "content"); ok {
			if b.Content, err = decodeContent(path+".content", c, depth+1); err != nil {
				break
			}
		}
		if v, ok := jsonbody.Present(obj, "is_error"); ok {
			err = jsonbody.As(path+".is_error", v, &b.IsError, "a boolean")
		}
	case BlockWebSearchToolResult:
		b.ToolUseID, err = jsonbody.RequiredString(obj, path, "tool_use_id")
	case BlockThinking:
		if b.Thinking, err = jsonbody.RequiredString(obj, path, "thinking"); err != nil {
			break
		}
		b.Signature, err = jsonbody.OptionalString(obj, path, "signature")
	case BlockRedactedThinking:
		b.Data, err = jsonbody.RequiredString(obj, path, "data")
	}
	return b, err
}

func requiredSource(obj jsonbody.Object, path string) (json.RawMessage, error) {
	src, ok := jsonbody.Present(obj, "source")
	if !ok {
		return nil, &RequestError{Field: path + ".source", Message: "Field required"}
	}
	so, err := jsonbody.DecodeObject(path+".source", src)
	if err != nil {
		return nil, err
	}
	if _, err := jsonbody.RequiredString(so, path+".source", "type"); err != nil {
		return nil, err
	}
	return src, nil
}

func decodeSystem(raw json.RawMessage) ([]string, error) {
	if jsonbody.IsAbsent(raw) {
		return nil, nil
	}
	if s, ok, err := jsonbody.StringValue("system", raw); ok || err != nil {
		if err != nil || s == "" {
			return nil, err
		}
		return []string{s}, nil
	}
	items, err := jsonbody.DecodeArray("system", raw)
	if err != nil {
		return nil, &RequestError{Field: "system", Message: "expected a string or an array of text blocks"}
	}
	out := make([]string, 0, len(items))
	for i, item := range items {
		path := "system." + strconv.Itoa(i)
		obj, err := jsonbody.DecodeObject(path, item)
		if err != nil {
			return nil, err
		}
		typ, err := jsonbody.RequiredString(obj, path, "type")
		if err != nil {
			return nil, err
		}
		if typ != BlockText {
			return nil, &RequestError{Field: path + ".type", Message: fmt.Sprintf("system blocks must be text, got %q", typ)}
		}
		text, err := jsonbody.RequiredString(obj, path, "text")
		if err != nil {
			return nil, err
		}
		out = append(out, text)
	}
	return out, nil
}

func decodeThinking(raw json.RawMessage) (*Thinking, error) {
	obj, err := jsonbody.DecodeObject("thinking", raw)
	if err != nil {
		return nil, err
	}
	typ, err := jsonbody.RequiredString(obj, "thinking", "type")
	if err != nil {
		return nil, err
	}
	t := &Thinking{Type: typ}
	switch typ {
	case "enabled":
		v, ok := jsonbody.Present(obj, "budget_tokens")
		if !ok {
			return nil, &RequestError{Field: "thinking.budget_tokens", Message: "Field required"}
		}
		if t.BudgetTokens, err = jsonbody.Int("thinking.budget_tokens", v); err != nil {
			return nil, err
		}
		if t.BudgetTokens < 1 {
			return nil, &RequestError{Field: "thinking.budget_tokens", Message: "must be at least 1"}
		}
	case "disabled", "adaptive":
	default:
		return nil, &RequestError{Field: "thinking.type", Message: fmt.Sprintf("must be \"enabled\", \"adaptive\" or \"disabled\", got %q", typ)}
	}
	return t, nil
}

func decodeTools(raw json.RawMessage) ([]json.RawMessage, error) {
	items, err := jsonbody.DecodeArray("tools", raw)
	if err != nil {
		return nil, err
	}
	for i, item := range items {
		path := "tools." + strconv.Itoa(i)
		obj, err := jsonbody.DecodeObject(path, item)
		if err != nil {
			return nil, err
		}
		if _, err := jsonbody.RequiredString(obj, path, "name"); err != nil {
			return nil, err
		}
	}
	return items, nil
}

// TextBlock is the JSON of a text block.
func TextBlock(s string) json.RawMessage {
	b, _ := json.Marshal(struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}{BlockText, s})
	return b
}
