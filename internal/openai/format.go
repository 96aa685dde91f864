package openai

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/meridian-gw/meridian/internal/anthropic"
	"github.com/meridian-gw/meridian/internal/schemacheck"
)

// response_format (text.format on the Responses API) becomes the Messages
// request's structured output: a JSON schema (json_object: any object)
// the backend enforces, or asks for in the prompt when it cannot. Either
// way the answer is held back until it is complete and checked before the
// client sees it. An answer wrapped in a Markdown code fence is unwrapped;
// one that still does not fit fails the request (a *FormatError) instead
// of reaching the client unchecked.

// anthropic is the format as the Messages request's structured output.
func (f *ResponseFormat) anthropic() *anthropic.OutputFormat {
	if f == nil {
		return nil
	}
	schema := json.RawMessage(`{"type":"object"}`)
	if f.Type == "json_schema" && len(f.Schema) > 0 {
		schema = json.RawMessage(compactJSON(f.Schema))
	}
	return &anthropic.OutputFormat{Schema: schema, Field: f.Field}
}

// FormatError is an answer that does not fit the requested format, asked
// for in Field.
type FormatError struct{ Field, Reason string }

func (e *FormatError) Error() string {
	field := e.Field
	if field == "" {
		field = "response_format"
	}
	return "the model's answer does not fit " + field + ": " + e.Reason
}

// Check returns the answer as the client receives it, or why it does not
// fit the format.
func (f *ResponseFormat) Check(text string) (string, error) {
	text = Unfence(text)
	switch f.Type {
	case "json_object":
		var obj map[string]json.RawMessage
		if err := json.Unmarshal([]byte(text), &obj); err != nil || !strings.HasPrefix(text, "{") {
			return "", &FormatError{Field: f.Field, Reason: "it is not a JSON object"}
		}
	case "json_schema":
		s, err := compileFormat(f.Schema)
		if err != nil {
			return "", &FormatError{Field: f.Field, Reason: err.Error()}
		}
		if err := s.Check([]byte(text)); err != nil {
			return "", &FormatError{Field: f.Field, Reason: err.Error()}
		}
	}
	return text, nil
}

// Unfence trims an answer and unwraps it from one Markdown code fence.
func Unfence(text string) string {
	t := strings.TrimSpace(text)
	if !strings.HasPrefix(t, "```") || !strings.HasSuffix(t, "```") || len(t) < 6 {
		return t
	}
	body := t[3 : len(t)-3]
	nl := strings.IndexByte(body, '\n')
	if nl < 0 {
		return t
	}
	if lang := strings.TrimSpace(body[:nl]); lang != "" && lang != "json" && lang != "JSON" {
		return t
	}
	return strings.TrimSpace(body[nl+1:])
}

func compileFormat(schema []byte) (*schemacheck.Schema, error) {
	return schemacheck.Compile(schema)
}

func compactJSON(raw []byte) string {
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return string(raw)
	}
	return buf.String()
}
