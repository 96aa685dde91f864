package openai

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/meridian-gw/meridian/internal/anthropic"
	"github.com/meridian-gw/meridian/internal/jsonbody"
)

// Limits that keep one request from making the decoder do unbounded work
// beyond reading its body.
const (
	maxMessages = 100_000
	maxStops    = 16
)

// Image media types the model takes.
var imageTypes = []string{"image/jpeg", "image/png", "image/gif", "image/webp"}

// DecodeChatRequest parses and validates a chat completions body. Unknown
// fields are ignored, as clients send many extensions; every error is a
// *jsonbody.Error naming the field.
func DecodeChatRequest(body []byte) (*ChatRequest, error) {
	top, err := jsonbody.Top(body)
	if err != nil {
		return nil, err
	}
	req := &ChatRequest{}
	if req.Model, err = jsonbody.RequiredString(top, "", "model"); err != nil {
		return nil, err
	}
	if req.Model == "" {
		return nil, jsonbody.Errorf("model", "must not be empty")
	}
	if req.Messages, err = decodeMessages(top["messages"]); err != nil {
		return nil, err
	}
	req.MediaAt = mediaAt("messages", req.Messages, func(m ChatMessage) []Part { return m.Parts })
	if v, ok := jsonbody.Present(top, "tools"); ok {
		if req.Tools, err = decodeTools(v); err != nil {
			return nil, err
		}
	}
	for _, step := range []func(jsonbody.Object, *ChatRequest) error{
		decodeLimits, decodeStreaming, decodeReasoning, decodeChatToolChoice, decodeFormat, decodeChatIdentity, decodeRefused, decodeIgnored, decodeWebSearch, decodeStore,
	} {
		if err := step(top, req); err != nil {
			return nil, err
		}
	}
	return req, nil
}

func decodeMessages(raw json.RawMessage) ([]ChatMessage, error) {
	if jsonbody.IsAbsent(raw) {
		return nil, jsonbody.Errorf("messages", "Field required")
	}
	items, err := jsonbody.DecodeArray("messages", raw)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return nil, jsonbody.Errorf("messages", "must contain at least one message")
	}
	if len(items) > maxMessages {
		return nil, jsonbody.Errorf("messages", "at most %d messages are allowed", maxMessages)
	}
	msgs := make([]ChatMessage, len(items))
	// open are the calls of the last assistant message that no tool
	// message has answered yet; answering is possible only right after it.
	var open []string
	answering := false
	for i, item := range items {
		path := jsonbody.Index("messages", i)
		m, err := decodeMessage(path, item)
		if err != nil {
			return nil, err
		}
		switch m.Role {
		case RoleAssistant:
			open, answering = nil, true
			for _, c := range m.ToolCalls {
				open = append(open, c.ID)
			}
		case RoleTool:
			if !answering {
				return nil, jsonbody.Errorf(path+".role", "a tool message must follow the assistant message whose tool_calls it answers")
			}
			at := slices.Index(open, m.ToolCallID)
			if at < 0 {
				return nil, jsonbody.Errorf(path+".tool_call_id", "%q answers no open tool call of the preceding assistant message", m.ToolCallID)
			}
			open = slices.Delete(open, at, at+1)
		default:
			answering = false
		}
		msgs[i] = m
	}
	if last := msgs[len(msgs)-1].Role; last != RoleUser && last != RoleTool {
		return nil, jsonbody.Errorf(jsonbody.Index("messages", len(msgs)-1)+".role",
			"the last message must be the user's or a tool result, got %q; continuing the assistant's own message is not supported", last)
	}
	return msgs, nil
}

func decodeMessage(path string, raw json.RawMessage) (ChatMessage, error) {
	obj, err := jsonbody.DecodeObject(path, raw)
	if err != nil {
		return ChatMessage{}, err
	}
	role, err := jsonbody.RequiredString(obj, path, "role")
	if err != nil {
		return ChatMessage{}, err
	}
	m := ChatMessage{Role: role}
	content, hasContent := jsonbody.Present(obj, "content")
	switch role {
	case RoleSystem, RoleDeveloper, RoleTool:
		if !hasContent {
			return m, jsonbody.Errorf(path+".content", "Field required")
		}
		m.Parts, err = decodeParts(path+".content", content, false)
		if err == nil && role == RoleTool {
			m.ToolCallID, err = jsonbody.RequiredString(obj, path, "tool_call_id")
		}
	case RoleUser:
		if !hasContent {
			return m, jsonbody.Errorf(path+".content", "Field required")
		}
		m.Parts, err = decodeParts(path+".content", content, true)
	case RoleAssistant:
		if hasContent {
			if m.Parts, err = decodeParts(path+".content", content, false); err != nil {
				return m, err
			}
		}
		if v, ok := jsonbody.Present(obj, "refusal"); ok {
			var s string
			if err := jsonbody.As(path+".refusal", v, &s, "a string"); err != nil {
				return m, err
			}
			if s != "" {
				m.Parts = append(m.Parts, Part{Type: PartText, Text: s})
			}
		}
		if _, ok := jsonbody.Present(obj, "function_call"); ok {
			return m, jsonbody.Errorf(path+".function_call", "the legacy function_call is not supported; send tool_calls")
		}
		if v, ok := jsonbody.Present(obj, "tool_calls"); ok {
			m.ToolCalls, err = decodeToolCalls(path+".tool_calls", v)
		}
	case "function":
		return m, jsonbody.Errorf(path+".role", "the legacy function role is not supported; send tool messages with a tool_call_id")
	default:
		return m, jsonbody.Errorf(path+".role", "must be one of system, developer, user, assistant or tool, got %q", role)
	}
	if err == nil {
		_, err = jsonbody.OptionalString(obj, path, "name")
	}
	return m, err
}

// partReader reads one part of a type at path.
type partReader func(path, typ string, obj jsonbody.Object) (Part, error)

// decodeContent reads content given as a string (one text part) or an
// array of typed parts, each read by read. Empty text is left out.
func decodeContent(path string, raw json.RawMessage, read partReader) ([]Part, error) {
	if s, ok, err := jsonbody.StringValue(path, raw); ok || err != nil {
		if err != nil || s == "" {
			return nil, err
		}
		return []Part{{Type: PartText, Text: s}}, nil
	}
	items, err := jsonbody.DecodeArray(path, raw)
	if err != nil {
		return nil, jsonbody.Errorf(path, "expected a string or an array of content parts")
	}
	parts := make([]Part, 0, len(items))
	for i, item := range items {
		p := jsonbody.Index(path, i)
		obj, typ, err := typed(p, item)
		if err != nil {
			return nil, err
		}
		part, err := read(p, typ, obj)
		if err != nil {
			return nil, err
		}
		if part.Type == PartText && part.Text == "" {
			continue
		}
		parts = append(parts, part)
	}
	return parts, nil
}

// decodeParts reads chat content; images only where the role may carry
// them.
func decodeParts(path string, raw json.RawMessage, images bool) ([]Part, error) {
	return decodeContent(path, raw, func(p, typ string, obj jsonbody.Object) (Part, error) {
		switch {
		case typ == PartText:
			text, err := jsonbody.RequiredString(obj, p, "text")
			return Part{Type: PartText, Text: text}, err
		case typ == "refusal":
			text, err := jsonbody.RequiredString(obj, p, "refusal")
			return Part{Type: PartText, Text: text}, err
		case typ == PartImage && images:
			return decodeImage(p, obj)
		case typ == "file":
			v, ok := jsonbody.Present(obj, "file")
			if !ok {
				return Part{}, jsonbody.Errorf(p+".file", "Field required")
			}
			fo, err := jsonbody.DecodeObject(p+".file", v)
			if err != nil {
				return Part{}, err
			}
			return decodeFile(p+".file", fo)
		case typ == "input_audio":
			return decodeAudio(p, obj)
		}
		return Part{}, jsonbody.Errorf(p+".type", "unsupported content part %q here", typ)
	})
}

// decodeAudio reads an input_audio part: base64 data in a format (wav or
// mp3), a document of that audio type for a backend that adapts media.
func decodeAudio(path string, obj jsonbody.Object) (Part, error) {
	v, ok := jsonbody.Present(obj, "input_audio")
	if !ok {
		return Part{}, jsonbody.Errorf(path+".input_audio", "Field required")
	}
	ao, err := jsonbody.DecodeObject(path+".input_audio", v)
	if err != nil {
		return Part{}, err
	}
	data, err := jsonbody.RequiredString(ao, path+".input_audio", "data")
	if err != nil {
		return Part{}, err
	}
	format, err := jsonbody.RequiredString(ao, path+".input_audio", "format")
	if err != nil {
		return Part{}, err
	}
	mediaType := map[string]string{"wav": "audio/wav", "mp3": "audio/mpeg"}[format]
	if mediaType == "" {
		return Part{}, jsonbody.Errorf(path+".input_audio.format", "must be wav or mp3")
	}
	if _, err := base64.StdEncoding.DecodeString(data); err != nil {
		return Part{}, jsonbody.Errorf(path+".input_audio.data", "the audio is not valid base64")
	}
	return Part{Type: PartDocument, MediaType: mediaType, Data: data}, nil
}

// mediaAt is the path of the first audio or video part of items' parts,
// named by prefix and index ("" for none).
func mediaAt[T any](prefix string, items []T, parts func(T) []Part) string {
	for i, it := range items {
		for j, p := range parts(it) {
			if p.Type == PartDocument && anthropic.MediaKind(p.MediaType) != "" {
				return fmt.Sprintf("%s.%d.content.%d", prefix, i, j)
			}
		}
	}
	return ""
}

// decodeImage reads an image_url part: a base64 data URL becomes an image
// the model sees; an https URL is passed on for the API to fetch. Nothing
// is fetched here.
func decodeImage(path string, obj jsonbody.Object) (Part, error) {
	v, ok := jsonbody.Present(obj, "image_url")
	if !ok {
		return Part{}, jsonbody.Errorf(path+".image_url", "Field required")
	}
	var url string
	if s, isString, err := jsonbody.StringValue(path+".image_url", v); isString || err != nil {
		if err != nil {
			return Part{}, err
		}
		url = s
	} else {
		io, err := jsonbody.DecodeObject(path+".image_url", v)
		if err != nil {
			return Part{}, err
		}
		if url, err = jsonbody.RequiredString(io, path+".image_url", "url"); err != nil {
			return Part{}, err
		}
	}
	return imageURL(path+".image_url.url", url)
}

// documentType reports a file type a request may attach: a document, or
// audio or video for a backend that adapts them.
func documentType(mediaType string) bool {
	return mediaType == "application/pdf" || mediaType == "text/plain" || anthropic.MediaKind(mediaType) != ""
}

// decodeFile reads an attached file: its data as a base64 data URL
// (file_data) and its name; a file id would need the Files API.
func decodeFile(path string, obj jsonbody.Object) (Part, error) {
	if id, _ := jsonbody.OptionalString(obj, path, "file_id"); id != "" {
		return Part{}, jsonbody.Errorf(path+".file_id", "file ids need the Files API, which this gateway does not serve; send the file as file_data")
	}
	if u, _ := jsonbody.OptionalString(obj, path, "file_url"); u != "" {
		return Part{}, jsonbody.Errorf(path+".file_url", "files are taken as file_data, not by URL")
	}
	data, err := jsonbody.RequiredString(obj, path, "file_data")
	if err != nil {
		return Part{}, err
	}
	name, err := jsonbody.OptionalString(obj, path, "filename")
	if err != nil {
		return Part{}, err
	}
	rest, ok := strings.CutPrefix(data, "data:")
	meta, b64, ok2 := strings.Cut(rest, ",")
	mediaType, isBase64 := strings.CutSuffix(meta, ";base64")
	if !ok || !ok2 || !isBase64 {
		return Part{}, jsonbody.Errorf(path+".file_data", "file_data must be a base64 data URL: data:<type>;base64,<data>")
	}
	mediaType = strings.ToLower(mediaType)
	if !documentType(mediaType) {
		return Part{}, jsonbody.Errorf(path+".file_data", "file type %q is not supported; use application/pdf, text/plain, or an audio or video type", mediaType)
	}
	if _, err := base64.StdEncoding.DecodeString(b64); err != nil {
		return Part{}, jsonbody.Errorf(path+".file_data", "the data URL is not valid base64")
	}
	return Part{Type: PartDocument, MediaType: mediaType, Data: b64, Text: name}, nil
}

// imageURL reads an image given by URL: a base64 data URL becomes an
// image the model sees; an https URL is passed on for the API to fetch.
func imageURL(field, url string) (Part, error) {
	if rest, ok := strings.CutPrefix(url, "data:"); ok {
		meta, data, ok := strings.Cut(rest, ",")
		mediaType, b64 := strings.CutSuffix(meta, ";base64")
		if !ok || !b64 {
			return Part{}, jsonbody.Errorf(field, "a data URL must be base64: data:<type>;base64,<data>")
		}
		mediaType = strings.ToLower(mediaType)
		if !slices.Contains(imageTypes, mediaType) {
			return Part{}, jsonbody.Errorf(field, "image type %q is not supported; use one of %s", mediaType, strings.Join(imageTypes, ", "))
		}
		if _, err := base64.StdEncoding.DecodeString(data); err != nil {
			return Part{}, jsonbody.Errorf(field, "the data URL is not valid base64")
		}
		return Part{Type: PartImage, MediaType: mediaType, Data: data}, nil
	}
	if strings.HasPrefix(strings.ToLower(url), "https://") {
		return Part{Type: PartImage, URL: url}, nil
	}
	return Part{}, jsonbody.Errorf(field, "expected a base64 data URL or an https URL")
}

func decodeToolCalls(path string, raw json.RawMessage) ([]ToolCall, error) {
	items, err := jsonbody.DecodeArray(path, raw)
	if err != nil {
		return nil, err
	}
	calls := make([]ToolCall, 0, len(items))
	for i, item := range items {
		p := jsonbody.Index(path, i)
		obj, err := jsonbody.DecodeObject(p, item)
		if err != nil {
			return nil, err
		}
		var c ToolCall
		if c.ID, err = jsonbody.RequiredString(obj, p, "id"); err != nil {
			return nil, err
		}
		if c.ID == "" {
			return nil, jsonbody.Errorf(p+".id", "must not be empty")
		}
		if slices.ContainsFunc(calls, func(o ToolCall) bool { return o.ID == c.ID }) {
			return nil, jsonbody.Errorf(p+".id", "%q is used by another call of this message", c.ID)
		}
		typ, err := jsonbody.OptionalString(obj, p, "type")
		if err != nil {
			return nil, err
		}
		if typ == "custom" {
			if err := decodeCustomCall(p, obj, &c); err != nil {
				return nil, err
			}
			calls = append(calls, c)
			continue
		}
		if typ != "" && typ != "function" {
			return nil, jsonbody.Errorf(p+".type", "only function and custom calls are supported, got %q", typ)
		}
		fn, name, err := function(p, obj)
		if err != nil {
			return nil, err
		}
		c.Name = name
		if c.Arguments, err = jsonbody.OptionalString(fn, p+".function", "arguments"); err != nil {
			return nil, err
		}
		if strings.TrimSpace(c.Arguments) == "" {
			c.Arguments = "{}"
		}
		if _, err := jsonbody.DecodeObject(p+".function.arguments", json.RawMessage(c.Arguments)); err != nil {
			return nil, jsonbody.Errorf(p+".function.arguments", "must be a JSON object as text")
		}
		calls = append(calls, c)
	}
	return calls, nil
}

func decodeTools(raw json.RawMessage) ([]Function, error) {
	items, err := jsonbody.DecodeArray("tools", raw)
	if err != nil {
		return nil, err
	}
	out := make([]Function, 0, len(items))
	for i, item := range items {
		p := jsonbody.Index("tools", i)
		obj, typ, err := typed(p, item)
		if err != nil {
			return nil, err
		}
		if typ == "custom" {
			cv, ok := jsonbody.Present(obj, "custom")
			if !ok {
				return nil, jsonbody.Errorf(p+".custom", "Field required")
			}
			co, err := jsonbody.DecodeObject(p+".custom", cv)
			if err != nil {
				return nil, err
			}
			f, err := decodeCustomTool(p+".custom", co)
			if err != nil {
				return nil, err
			}
			out = append(out, f)
			continue
		}
		if typ != "function" {
			return nil, jsonbody.Errorf(p+".type", "only function and custom tools are supported, got %q", typ)
		}
		fn, name, err := function(p, obj)
		if err != nil {
			return nil, err
		}
		f := Function{Name: name}
		if f.Description, err = jsonbody.OptionalString(fn, p+".function", "description"); err != nil {
			return nil, err
		}
		if v, ok := jsonbody.Present(fn, "parameters"); ok {
			if _, err := jsonbody.DecodeObject(p+".function.parameters", v); err != nil {
				return nil, err
			}
			f.Parameters = v
		}
		if v, ok := jsonbody.Present(fn, "strict"); ok {
			var strict bool
			if err := jsonbody.As(p+".function.strict", v, &strict, "a boolean"); err != nil {
				return nil, err
			}
		}
		out = append(out, f)
	}
	return out, nil
}

// typed reads an object at path that names its type.
func typed(path string, raw json.RawMessage) (jsonbody.Object, string, error) {
	obj, err := jsonbody.DecodeObject(path, raw)
	if err != nil {
		return nil, "", err
	}
	typ, err := jsonbody.RequiredString(obj, path, "type")
	return obj, typ, err
}

// function reads the function object of a tool or a call at path and its
// name, which may not be empty.
func function(path string, obj jsonbody.Object) (jsonbody.Object, string, error) {
	fv, ok := jsonbody.Present(obj, "function")
	if !ok {
		return nil, "", jsonbody.Errorf(path+".function", "Field required")
	}
	fn, err := jsonbody.DecodeObject(path+".function", fv)
	if err != nil {
		return nil, "", err
	}
	name, err := jsonbody.RequiredString(fn, path+".function", "name")
	if err == nil && name == "" {
		err = jsonbody.Errorf(path+".function.name", "must not be empty")
	}
	return fn, name, err
}
