package hooks

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// Message is a model request or its answer as a hook sees it.
type Message struct {
	// API is the route's protocol: messages, count_tokens, chat or
	// responses.
	API          string
	Method, Path string
	// Key is the name of the API key the request came with ("" for the
	// admin key or none).
	Key string
	// Status is an answer's HTTP status (0 for a request).
	Status int
	Header http.Header
	// Body is the JSON body; for a streamed answer, the stream's text,
	// cut at the hook's bound when Truncated.
	Body      []byte
	Stream    bool
	Truncated bool
}

// hidden are headers no hook sees or sets: credentials, and what the
// HTTP layer owns.
var hidden = []string{
	"Authorization", "Proxy-Authorization", "X-Api-Key", "X-Goog-Api-Key", "Cookie", "Set-Cookie",
	"X-Meridian-Cluster-Key", "Content-Length", "Transfer-Encoding", "Connection", "Trailer", "Host",
}

func isHidden(name string) bool {
	return slices.Contains(hidden, http.CanonicalHeaderKey(name))
}

// envelope is the JSON a hook reads on its stdin.
type envelope struct {
	Hook      string            `json:"hook"`
	Stage     string            `json:"stage"`
	API       string            `json:"api"`
	Method    string            `json:"method"`
	Path      string            `json:"path"`
	Key       string            `json:"key,omitempty"`
	Status    int               `json:"status,omitempty"`
	Headers   map[string]string `json:"headers"`
	Stream    bool              `json:"stream,omitempty"`
	Truncated bool              `json:"truncated,omitempty"`
	Body      json.RawMessage   `json:"body"`
}

// encode is what hook h, at stage, reads for m: the visible headers with
// lower-case names (several values joined by ", "), and the body as JSON
// (a stream's text, or a body that is not JSON, as a JSON string).
func encode(h *Spec, stage string, m Message) ([]byte, error) {
	e := envelope{Hook: h.Name, Stage: stage, API: m.API, Method: m.Method, Path: m.Path, Key: m.Key, Status: m.Status,
		Headers: map[string]string{}, Stream: m.Stream, Truncated: m.Truncated, Body: m.Body}
	for name, values := range m.Header {
		if !isHidden(name) {
			e.Headers[strings.ToLower(name)] = strings.Join(values, ", ")
		}
	}
	if m.Stream || !json.Valid(m.Body) {
		text, err := json.Marshal(string(m.Body))
		if err != nil {
			return nil, err
		}
		e.Body = text
	}
	return json.Marshal(e)
}

// reply is what a transform hook writes on its stdout. Fields it leaves
// out are left as they were; empty output changes nothing.
type reply struct {
	Headers map[string]*string `json:"headers"`
	Body    json.RawMessage    `json:"body"`
	Error   *struct {
		Status  int    `json:"status"`
		Message string `json:"message"`
	} `json:"error"`
}

// apply reads a transform's reply into m. Each header it names is set to
// its value, or removed when null; the others stay as they were. body
// replaces the body and must be a JSON object. A reply with error refuses
// the request: Refusal is returned.
func apply(name string, out []byte, m Message) (Message, error) {
	out = bytes.TrimSpace(out)
	if len(out) == 0 {
		return m, nil
	}
	var r reply
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return m, fmt.Errorf("its output is not a reply: %w", err)
	}
	if dec.More() {
		return m, fmt.Errorf("its output holds more than one JSON value")
	}
	if e := r.Error; e != nil {
		status := e.Status
		if status == 0 {
			status = http.StatusForbidden
		}
		if status < 400 || status > 599 {
			return m, fmt.Errorf("it refused with status %d, which is not an error status", e.Status)
		}
		return m, &Error{Hook: name, Status: status, Message: cmp.Or(e.Message, "refused by hook "+name), refused: true}
	}
	if r.Headers != nil {
		h := m.Header.Clone()
		if h == nil {
			h = http.Header{}
		}
		for key, v := range r.Headers {
			switch {
			case isHidden(key):
				return m, fmt.Errorf("it set header %s, which hooks may not set", http.CanonicalHeaderKey(key))
			case !validHeader(key, v):
				return m, fmt.Errorf("it set header %q to a value HTTP does not allow", key)
			case v == nil:
				h.Del(key)
			default:
				h.Set(key, *v)
			}
		}
		m.Header = h
	}
	if r.Body != nil && !bytes.Equal(r.Body, []byte("null")) {
		if m.Stream {
			return m, fmt.Errorf("it changed a streamed answer, which hooks only observe")
		}
		if !bytes.HasPrefix(bytes.TrimSpace(r.Body), []byte("{")) {
			return m, fmt.Errorf("its body is not a JSON object")
		}
		m.Body = compact(r.Body)
	}
	return m, nil
}

// validHeader reports whether name and value can go on the wire as a
// header: a token name, and a value without line breaks or NULs.
func validHeader(name string, v *string) bool {
	if name == "" || strings.ContainsAny(name, " \t\r\n:()<>@,;\\\"/[]?={}") {
		return false
	}
	return v == nil || !strings.ContainsAny(*v, "\r\n\x00")
}

func compact(b []byte) []byte {
	var out bytes.Buffer
	if json.Compact(&out, b) != nil {
		return b
	}
	return out.Bytes()
}

// Error is a hook's failure or refusal, as the client hears it: Status
// and Message, naming the hook but nothing of its command or output.
type Error struct {
	Hook    string
	Status  int
	Message string
	refused bool
}

func (e *Error) Error() string { return e.Message }

// Refused reports whether the hook refused the request on purpose, rather
// than failing.
func (e *Error) Refused() bool { return e.refused }
