package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// RequestError is a client mistake in a request body. Field is the JSON
// path of the offending value ("messages.2.content.0.text"), empty for the
// body as a whole.
type RequestError struct {
	Field   string
	Message string
}

func (e *RequestError) Error() string {
	if e.Field == "" {
		return e.Message
	}
	return e.Field + ": " + e.Message
}

// Limits that keep a single request from making the decoder do unbounded
// work beyond reading its body.
const (
	maxMessages      = 100_000
	maxBlockDepth    = 4 // tool_result content may nest blocks; nothing deeper
	maxStopSequences = 16
)

type object map[string]json.RawMessage

// DecodeMessagesRequest parses and validates a Messages API request body;
// count_tokens bodies share the shape. Unknown top-level fields are ignored,
// as clients send many extensions. Every error is a *RequestError.
func DecodeMessagesRequest(body []byte) (*MessagesRequest, error) {
	top, err := decodeObject("", body)
	if err != nil {
		if len(bytes.TrimSpace(body)) == 0 {
			return nil, &RequestError{Message: "request body is empty; expected a JSON object"}
		}
		if re, ok := err.(*RequestError); ok && re.Message == "expected an object" {
			return nil, &RequestError{Message: "request body must be a JSON object"}
		}
		return nil, err
	}
	req := &MessagesRequest{}
	if req.Model, err = requiredString(top, "", "model"); err != nil {
		return nil, err
	}
	if req.Model == "" {
		return nil, &RequestError{Field: "model", Message: "must not be empty"}
	}
	if req.Messages, err = decodeMessages(top["messages"]); err != nil {
		return nil, err
	}
	if req.System, err = decodeSystem(top["system"]); err != nil {
		return nil, err
	}
	if v, ok := present(top, "max_tokens"); ok {
		if req.MaxTokens, err = decodeInt("max_tokens", v); err != nil {
			return nil, err
		}
		if req.MaxTokens < 1 {
			return nil, &RequestError{Field: "max_tokens", Message: "must be at least 1"}
		}
	}
	if v, ok := present(top, "stream"); ok {
		if err := decodeAs("stream", v, &req.Stream, "a boolean"); err != nil {
			return nil, err
		}
	}
	if v, ok := present(top, "stop_sequences"); ok {
		if err := decodeAs("stop_sequences", v, &req.StopSequences, "an array of strings"); err != nil {
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
		if v, ok := present(top, f.name); ok {
			var n float64
			if err := decodeAs(f.name, v, &n, "a number"); err != nil {
				return nil, err
			}
			*f.dst = &n
		}
	}
	if v, ok := present(top, "top_k"); ok {
		n, err := decodeInt("top_k", v)
		if err != nil {
			return nil, err
		}
		req.TopK = &n
	}
	if v, ok := present(top, "metadata"); ok {
		if _, err := decodeObject("metadata", v); err != nil {
			return nil, err
		}
		req.Metadata = v
	}
	if v, ok := present(top, "thinking"); ok {
		if req.Thinking, err = decodeThinking(v); err != nil {
			return nil, err
		}
	}
	if v, ok := present(top, "tools"); ok {
		if req.Tools, err = decodeTools(v); err != nil {
			return nil, err
		}
	}
	if v, ok := present(top, "tool_choice"); ok {
		tc, err := decodeObject("tool_choice", v)
		if err != nil {
			return nil, err
		}
		if _, err := requiredString(tc, "tool_choice", "type"); err != nil {
			return nil, err
		}
		req.ToolChoice = v
	}
	if v, ok := present(top, "output_config"); ok {
		oc, err := decodeObject("output_config", v)
		if err != nil {
			return nil, err
		}
		if e, ok := present(oc, "effort"); ok {
			if err := decodeAs("output_config.effort", e, &req.Effort, "a string"); err != nil {
				return nil, err
			}
		}
	}
	return req, nil
}

func decodeMessages(raw json.RawMessage) ([]Message, error) {
	if isAbsent(raw) {
		return nil, &RequestError{Field: "messages", Message: "Field required"}
	}
	items, err := decodeArray("messages", raw)
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
		obj, err := decodeObject(path, item)
		if err != nil {
			return nil, err
		}
		role, err := requiredString(obj, path, "role")
		if err != nil {
			return nil, err
		}
		switch role {
		case RoleUser, RoleAssistant, RoleSystem:
		default:
			return nil, &RequestError{Field: path + ".role", Message: fmt.Sprintf("must be \"user\" or \"assistant\", got %q", role)}
		}
		content, ok := present(obj, "content")
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
	if s, ok, err := stringValue(path, raw); ok || err != nil {
		if err != nil {
			return nil, err
		}
		return []ContentBlock{{Type: BlockText, Text: s, Raw: TextBlock(s)}}, nil
	}
	items, err := decodeArray(path, raw)
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
	obj, err := decodeObject(path, raw)
	if err != nil {
		return ContentBlock{}, err
	}
	typ, err := requiredString(obj, path, "type")
	if err != nil {
		return ContentBlock{}, err
	}
	if typ == "" {
		return ContentBlock{}, &RequestError{Field: path + ".type", Message: "must not be empty"}
	}
	b := ContentBlock{Type: typ, Raw: raw}
	switch typ {
	case BlockText:
		b.Text, err = requiredString(obj, path, "text")
	case BlockImage, BlockDocument:
		b.Source, err = requiredSource(obj, path)
		if err == nil && typ == BlockDocument {
			b.Title, err = optionalString(obj, path, "title")
		}
	case BlockToolUse:
		if b.ID, err = requiredString(obj, path, "id"); err != nil {
			break
		}
		if b.Name, err = requiredString(obj, path, "name"); err != nil {
			break
		}
		in, ok := present(obj, "input")
		if !ok {
			in = json.RawMessage(`{}`)
		} else if _, err = decodeObject(path+".input", in); err != nil {
			break
		}
		b.Input = in
	case BlockToolResult:
		if b.ToolUseID, err = requiredString(obj, path, "tool_use_id"); err != nil {
			break
		}
		if c, ok := present(obj, "content"); ok {
			if b.Content, err = decodeContent(path+".content", c, depth+1); err != nil {
				break
			}
		}
		if v, ok := present(obj, "is_error"); ok {
			err = decodeAs(path+".is_error", v, &b.IsError, "a boolean")
		}
	case BlockThinking:
		if b.Thinking, err = requiredString(obj, path, "thinking"); err != nil {
			break
		}
		b.Signature, err = optionalString(obj, path, "signature")
	case BlockRedactedThinking:
		b.Data, err = requiredString(obj, path, "data")
	}
	return b, err
}

func requiredSource(obj object, path string) (json.RawMessage, error) {
	src, ok := present(obj, "source")
	if !ok {
		return nil, &RequestError{Field: path + ".source", Message: "Field required"}
	}
	so, err := decodeObject(path+".source", src)
	if err != nil {
		return nil, err
	}
	if _, err := requiredString(so, path+".source", "type"); err != nil {
		return nil, err
	}
	return src, nil
}

func decodeSystem(raw json.RawMessage) ([]string, error) {
	if isAbsent(raw) {
		return nil, nil
	}
	if s, ok, err := stringValue("system", raw); ok || err != nil {
		if err != nil || s == "" {
			return nil, err
		}
		return []string{s}, nil
	}
	items, err := decodeArray("system", raw)
	if err != nil {
		return nil, &RequestError{Field: "system", Message: "expected a string or an array of text blocks"}
	}
	out := make([]string, 0, len(items))
	for i, item := range items {
		path := "system." + strconv.Itoa(i)
		obj, err := decodeObject(path, item)
		if err != nil {
			return nil, err
		}
		typ, err := requiredString(obj, path, "type")
		if err != nil {
			return nil, err
		}
		if typ != BlockText {
			return nil, &RequestError{Field: path + ".type", Message: fmt.Sprintf("system blocks must be text, got %q", typ)}
		}
		text, err := requiredString(obj, path, "text")
		if err != nil {
			return nil, err
		}
		out = append(out, text)
	}
	return out, nil
}

func decodeThinking(raw json.RawMessage) (*Thinking, error) {
	obj, err := decodeObject("thinking", raw)
	if err != nil {
		return nil, err
	}
	typ, err := requiredString(obj, "thinking", "type")
	if err != nil {
		return nil, err
	}
	t := &Thinking{Type: typ}
	switch typ {
	case "enabled":
		v, ok := present(obj, "budget_tokens")
		if !ok {
			return nil, &RequestError{Field: "thinking.budget_tokens", Message: "Field required"}
		}
		if t.BudgetTokens, err = decodeInt("thinking.budget_tokens", v); err != nil {
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
	items, err := decodeArray("tools", raw)
	if err != nil {
		return nil, err
	}
	for i, item := range items {
		path := "tools." + strconv.Itoa(i)
		obj, err := decodeObject(path, item)
		if err != nil {
			return nil, err
		}
		if _, err := requiredString(obj, path, "name"); err != nil {
			return nil, err
		}
	}
	return items, nil
}

// --- small typed readers that name the field on failure ---

func present(obj object, key string) (json.RawMessage, bool) {
	v, ok := obj[key]
	if !ok || isAbsent(v) {
		return nil, false
	}
	return v, true
}

func isAbsent(v json.RawMessage) bool {
	v = bytes.TrimSpace(v)
	return len(v) == 0 || bytes.Equal(v, []byte("null"))
}

func decodeObject(path string, raw json.RawMessage) (object, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		if path == "" && !json.Valid(raw) {
			return nil, syntaxError(raw)
		}
		return nil, &RequestError{Field: path, Message: "expected an object"}
	}
	var obj object
	if err := json.Unmarshal(raw, &obj); err != nil {
		if path == "" {
			return nil, syntaxError(raw)
		}
		return nil, &RequestError{Field: path, Message: "expected an object"}
	}
	return obj, nil
}

func decodeArray(path string, raw json.RawMessage) ([]json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '[' {
		return nil, &RequestError{Field: path, Message: "expected an array"}
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, &RequestError{Field: path, Message: "expected an array"}
	}
	return items, nil
}

// stringValue reports ok=true when raw is a JSON string.
func stringValue(path string, raw json.RawMessage) (string, bool, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '"' {
		return "", false, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", true, &RequestError{Field: path, Message: "invalid string"}
	}
	return s, true, nil
}

func requiredString(obj object, path, key string) (string, error) {
	field := join(path, key)
	v, ok := present(obj, key)
	if !ok {
		return "", &RequestError{Field: field, Message: "Field required"}
	}
	s, isString, err := stringValue(field, v)
	if err != nil {
		return "", err
	}
	if !isString {
		return "", &RequestError{Field: field, Message: "expected a string"}
	}
	return s, nil
}

func optionalString(obj object, path, key string) (string, error) {
	if _, ok := present(obj, key); !ok {
		return "", nil
	}
	return requiredString(obj, path, key)
}

func decodeInt(field string, raw json.RawMessage) (int, error) {
	var f float64
	if err := decodeAs(field, raw, &f, "an integer"); err != nil {
		return 0, err
	}
	if f != math.Trunc(f) || f > math.MaxInt32 || f < math.MinInt32 {
		return 0, &RequestError{Field: field, Message: "expected an integer"}
	}
	return int(f), nil
}

func decodeAs(field string, raw json.RawMessage, dst any, want string) error {
	if err := json.Unmarshal(raw, dst); err != nil {
		return &RequestError{Field: field, Message: "expected " + want}
	}
	return nil
}

func syntaxError(raw []byte) error {
	var v any
	err := json.Unmarshal(raw, &v)
	if se, ok := err.(*json.SyntaxError); ok {
		return &RequestError{Message: fmt.Sprintf("malformed JSON at byte %d: %v", se.Offset, se)}
	}
	if err != nil {
		return &RequestError{Message: "malformed JSON: " + err.Error()}
	}
	return &RequestError{Message: "request body must be a JSON object"}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// TextBlock is the JSON of a text block.
func TextBlock(s string) json.RawMessage {
	b, _ := json.Marshal(struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}{BlockText, s})
	return b
}
