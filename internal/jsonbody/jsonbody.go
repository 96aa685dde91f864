// Package jsonbody reads JSON request bodies field by field, so that every
// protocol decoder refuses bad input the same way: each error is an *Error
// naming the JSON path of the offending value. It is pure.
package jsonbody

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
)

// Error is a client mistake in a request body. Field is the JSON path of
// the offending value ("messages.2.content.0.text"), empty for the body as
// a whole.
type Error struct {
	Field   string
	Message string
}

func (e *Error) Error() string {
	if e.Field == "" {
		return e.Message
	}
	return e.Field + ": " + e.Message
}

// Errorf is an *Error at field.
func Errorf(field, format string, args ...any) *Error {
	return &Error{Field: field, Message: fmt.Sprintf(format, args...)}
}

// Object is a decoded JSON object whose values are still raw.
type Object map[string]json.RawMessage

// Top decodes a whole request body, which must be a JSON object.
func Top(body []byte) (Object, error) {
	obj, err := DecodeObject("", body)
	if err == nil {
		return obj, nil
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, &Error{Message: "request body is empty; expected a JSON object"}
	}
	var re *Error
	if errors.As(err, &re) && re.Message == "expected an object" {
		return nil, &Error{Message: "request body must be a JSON object"}
	}
	return nil, err
}

// Present returns the value of key unless it is absent or null.
func Present(obj Object, key string) (json.RawMessage, bool) {
	v, ok := obj[key]
	if !ok || IsAbsent(v) {
		return nil, false
	}
	return v, true
}

// IsAbsent reports an empty or null value.
func IsAbsent(v json.RawMessage) bool {
	v = bytes.TrimSpace(v)
	return len(v) == 0 || bytes.Equal(v, []byte("null"))
}

// DecodeObject reads an object at path.
func DecodeObject(path string, raw json.RawMessage) (Object, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		if path == "" && !json.Valid(raw) {
			return nil, syntaxError(raw)
		}
		return nil, &Error{Field: path, Message: "expected an object"}
	}
	var obj Object
	if err := json.Unmarshal(raw, &obj); err != nil {
		if path == "" {
			return nil, syntaxError(raw)
		}
		return nil, &Error{Field: path, Message: "expected an object"}
	}
	return obj, nil
}

// DecodeArray reads an array at path.
func DecodeArray(path string, raw json.RawMessage) ([]json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '[' {
		return nil, &Error{Field: path, Message: "expected an array"}
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, &Error{Field: path, Message: "expected an array"}
	}
	return items, nil
}

// StringValue reports ok=true when raw is a JSON string.
func StringValue(path string, raw json.RawMessage) (string, bool, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '"' {
		return "", false, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", true, &Error{Field: path, Message: "invalid string"}
	}
	return s, true, nil
}

// RequiredString reads the string obj[key] at path.key.
func RequiredString(obj Object, path, key string) (string, error) {
	field := Join(path, key)
	v, ok := Present(obj, key)
	if !ok {
		return "", &Error{Field: field, Message: "Field required"}
	}
	s, isString, err := StringValue(field, v)
	if err != nil {
		return "", err
	}
	if !isString {
		return "", &Error{Field: field, Message: "expected a string"}
	}
	return s, nil
}

// OptionalString reads obj[key] if present; absent is "".
func OptionalString(obj Object, path, key string) (string, error) {
	if _, ok := Present(obj, key); !ok {
		return "", nil
	}
	return RequiredString(obj, path, key)
}

// Int reads an integer that fits 32 bits.
func Int(field string, raw json.RawMessage) (int, error) {
	var f float64
	if err := As(field, raw, &f, "an integer"); err != nil {
		return 0, err
	}
	if f != math.Trunc(f) || f > math.MaxInt32 || f < math.MinInt32 {
		return 0, &Error{Field: field, Message: "expected an integer"}
	}
	return int(f), nil
}

// As decodes raw into dst; want names the expected type in the error.
func As(field string, raw json.RawMessage, dst any, want string) error {
	if err := json.Unmarshal(raw, dst); err != nil {
		return &Error{Field: field, Message: "expected " + want}
	}
	return nil
}

// Join appends key to a path.
func Join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// Index appends an array index to a path.
func Index(path string, i int) string { return path + "." + strconv.Itoa(i) }

func syntaxError(raw []byte) error {
	var v any
	err := json.Unmarshal(raw, &v)
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return &Error{Message: fmt.Sprintf("malformed JSON at byte %d: %v", se.Offset, se)}
	}
	if err != nil {
		return &Error{Message: "malformed JSON: " + err.Error()}
	}
	return &Error{Message: "request body must be a JSON object"}
}
