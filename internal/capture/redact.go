package capture

import (
	"bytes"
	"slices"
)

// Redacted stands where a secret was.
const Redacted = "[REDACTED]"

// shape is one kind of secret by its look: a literal start and a body of
// token characters at least min long (the start included).
type shape struct {
	start string
	body  func(byte) bool
	min   int
	// keepStart leaves the start visible ("Bearer [REDACTED]"), so the
	// page still says what kind of secret was there.
	keepStart bool
}

func tokenChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}

func base64Char(c byte) bool {
	return tokenChar(c) || c == '.' || c == '~' || c == '+' || c == '/' || c == '='
}

func upperDigit(c byte) bool { return c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' }

// shapes are the secrets recognised anywhere in a body: the vendors' key
// and token prefixes, Meridian's own keys, bearer tokens and JWTs.
func shapes() []shape {
	return []shape{
		{start: "sk-", body: tokenChar, min: 20},  // Anthropic and OpenAI keys and tokens
		{start: "mk-", body: upperDigit, min: 29}, // Meridian's keys
		{start: "Bearer ", body: base64Char, min: 15, keepStart: true},
		{start: "bearer ", body: base64Char, min: 15, keepStart: true},
		{start: "ghp_", body: tokenChar, min: 24},
		{start: "gho_", body: tokenChar, min: 24},
		{start: "ghs_", body: tokenChar, min: 24},
		{start: "github_pat_", body: tokenChar, min: 30},
		{start: "xoxb-", body: tokenChar, min: 15},
		{start: "xoxp-", body: tokenChar, min: 15},
		{start: "AKIA", body: upperDigit, min: 20},
		{start: "AIza", body: tokenChar, min: 39},
		{start: "whsec_", body: tokenChar, min: 20},
		{start: "eyJ", body: base64Char, min: 40}, // a JWT: header.payload.signature
	}
}

// secretFields are JSON fields whose string value is a secret whatever
// it looks like.
func secretFields() []string {
	return []string{"api_key", "apikey", "apiKey", "password", "secret", "token", "access_token",
		"refresh_token", "client_secret", "authorization", "Authorization", "x-api-key"}
}

// Redactor removes secrets from what is captured before it is kept.
type Redactor struct {
	shapes   []shape
	fields   []string
	literals [][]byte
}

// NewRedactor recognises the usual shapes of secrets and the literal
// secrets given (the admin key, the cluster key); literals shorter than
// 8 bytes are too short to tell from ordinary text and are left out.
func NewRedactor(literals ...string) *Redactor {
	r := &Redactor{shapes: shapes(), fields: secretFields()}
	for _, l := range literals {
		if len(l) >= 8 {
			r.literals = append(r.literals, []byte(l))
		}
	}
	return r
}

// Redact returns b with every secret it recognises replaced by Redacted:
// the shapes above, the values of JSON fields named like secrets, PEM
// private keys, and the literal secrets. It runs in time linear in b, as
// a few passes of bytes.Index; b itself is not changed.
func (r *Redactor) Redact(b []byte) []byte {
	var spans [][2]int
	for _, s := range r.shapes {
		spans = shapeSpans(b, s, spans)
	}
	spans = fieldSpans(b, r.fields, spans)
	spans = pemSpans(b, spans)
	for _, lit := range r.literals {
		for i := 0; ; {
			j := bytes.Index(b[i:], lit)
			if j < 0 {
				break
			}
			spans = append(spans, [2]int{i + j, i + j + len(lit)})
			i += j + len(lit)
		}
	}
	if len(spans) == 0 {
		return b
	}
	return replace(b, spans)
}

func shapeSpans(b []byte, s shape, spans [][2]int) [][2]int {
	start := []byte(s.start)
	for i := 0; ; {
		j := bytes.Index(b[i:], start)
		if j < 0 {
			return spans
		}
		at := i + j
		end := at + len(start)
		for end < len(b) && s.body(b[end]) {
			end++
		}
		// A secret starts a word: "task-list" holds "sk-" but is no key.
		if end-at >= s.min && (at == 0 || !tokenChar(b[at-1]) || s.keepStart) {
			from := at
			if s.keepStart {
				from += len(start)
			}
			spans = append(spans, [2]int{from, end})
		}
		i = max(end, at+1)
	}
}

// fieldSpans finds "name": "value" for the secret field names and spans
// the value (inside its quotes).
func fieldSpans(b []byte, fields []string, spans [][2]int) [][2]int {
	for _, name := range fields {
		key := []byte(`"` + name + `"`)
		for i := 0; ; {
			j := bytes.Index(b[i:], key)
			if j < 0 {
				break
			}
			k := i + j + len(key)
			i = k
			for k < len(b) && (b[k] == ' ' || b[k] == ':' || b[k] == '\t') {
				k++
			}
			if k >= len(b) || b[k] != '"' {
				continue
			}
			end := k + 1
			for end < len(b) && b[end] != '"' {
				if b[end] == '\\' {
					end++
				}
				end++
			}
			if end > len(b) {
				end = len(b)
			}
			if end > k+1 {
				spans = append(spans, [2]int{k + 1, end})
			}
			i = end
		}
	}
	return spans
}

// pemSpans spans a PEM private key's whole block.
func pemSpans(b []byte, spans [][2]int) [][2]int {
	begin, endMark := []byte("-----BEGIN "), []byte("PRIVATE KEY-----")
	for i := 0; ; {
		j := bytes.Index(b[i:], begin)
		if j < 0 {
			return spans
		}
		at := i + j
		head := bytes.Index(b[at:], endMark)
		if head < 0 || head > 64 {
			i = at + len(begin)
			continue
		}
		rest := at + head + len(endMark)
		tail := bytes.Index(b[rest:], endMark)
		if tail < 0 {
			spans = append(spans, [2]int{at, len(b)})
			return spans
		}
		end := rest + tail + len(endMark)
		spans = append(spans, [2]int{at, end})
		i = end
	}
}

// replace writes b with the spans (in any order, overlapping or not)
// replaced by Redacted.
func replace(b []byte, spans [][2]int) []byte {
	slices.SortFunc(spans, func(x, y [2]int) int { return x[0] - y[0] })
	out := make([]byte, 0, len(b))
	last := 0
	for _, s := range spans {
		if s[1] <= last {
			continue
		}
		from := max(s[0], last)
		out = append(out, b[last:from]...)
		out = append(out, Redacted...)
		last = s[1]
	}
	return append(out, b[last:]...)
}
