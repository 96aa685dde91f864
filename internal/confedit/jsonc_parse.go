package confedit

import (
	"encoding/json"
	"fmt"
)

// jnode is one JSON value and where its text lies: [start, end).
type jnode struct {
	kind       byte // '{', '[', '"', or 'v' for a number or literal
	start, end int
	members    []jmember
	elems      []*jnode
}

type jmember struct {
	key      string
	keyStart int
	val      *jnode
}

func (n *jnode) member(k string) *jmember {
	for i := range n.members {
		if n.members[i].key == k {
			return &n.members[i]
		}
	}
	return nil
}

func (n *jnode) firstStart() int {
	if len(n.members) > 0 {
		return n.members[0].keyStart
	}
	return n.elems[0].start
}

// parseJSONC reads one JSONC value filling the whole of src. It is strict
// JSON apart from comments and trailing commas, and refuses a key given
// twice in one object: which of the two a client honours is its own
// business, and an edit of either would be a guess.
func parseJSONC(src []byte) (*jnode, error) {
	p := &jparser{src: src}
	n, err := p.value(0)
	if err != nil {
		return nil, err
	}
	if i := skipSpace(src, p.pos); i < len(src) {
		return nil, p.fail(i, "unexpected text after the end of the document")
	}
	return n, nil
}

type jparser struct {
	src []byte
	pos int
}

func (p *jparser) fail(off int, format string, args ...any) error {
	return &Error{lineAt(p.src, off), fmt.Sprintf(format, args...)}
}

const maxDepth = 200

func (p *jparser) value(depth int) (*jnode, error) {
	if depth > maxDepth {
		return nil, p.fail(p.pos, "nested too deeply")
	}
	p.pos = skipSpace(p.src, p.pos)
	if p.pos >= len(p.src) {
		return nil, p.fail(p.pos, "unexpected end of the document")
	}
	start := p.pos
	switch c := p.src[p.pos]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		if err := p.str(); err != nil {
			return nil, err
		}
		return &jnode{kind: '"', start: start, end: p.pos}, nil
	default:
		for p.pos < len(p.src) && !isDelim(p.src[p.pos]) {
			p.pos++
		}
		var v any
		if p.pos == start || json.Unmarshal(p.src[start:p.pos], &v) != nil {
			return nil, p.fail(start, "%q is not a JSON value", clip(p.src[start:max(p.pos, start+1)]))
		}
		return &jnode{kind: 'v', start: start, end: p.pos}, nil
	}
}

func (p *jparser) object(depth int) (*jnode, error) {
	n := &jnode{kind: '{', start: p.pos}
	p.pos++
	for {
		p.pos = skipSpace(p.src, p.pos)
		if p.pos >= len(p.src) {
			return nil, p.fail(n.start, "object not closed")
		}
		if p.src[p.pos] == '}' {
			p.pos++
			n.end = p.pos
			return n, nil
		}
		if p.src[p.pos] != '"' {
			return nil, p.fail(p.pos, "expected a quoted key")
		}
		keyStart := p.pos
		if err := p.str(); err != nil {
			return nil, err
		}
		var key string
		if err := json.Unmarshal(p.src[keyStart:p.pos], &key); err != nil {
			return nil, p.fail(keyStart, "bad key")
		}
		if n.member(key) != nil {
			return nil, p.fail(keyStart, "key %q appears twice in one object", key)
		}
		p.pos = skipSpace(p.src, p.pos)
		if p.pos >= len(p.src) || p.src[p.pos] != ':' {
			return nil, p.fail(p.pos, "expected ':' after key %q", key)
		}
		p.pos++
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		n.members = append(n.members, jmember{key: key, keyStart: keyStart, val: v})
		if err := p.comma('}'); err != nil {
			return nil, err
		}
	}
}

func (p *jparser) array(depth int) (*jnode, error) {
	n := &jnode{kind: '[', start: p.pos}
	p.pos++
	for {
		p.pos = skipSpace(p.src, p.pos)
		if p.pos >= len(p.src) {
			return nil, p.fail(n.start, "array not closed")
		}
		if p.src[p.pos] == ']' {
			p.pos++
			n.end = p.pos
			return n, nil
		}
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		n.elems = append(n.elems, v)
		if err := p.comma(']'); err != nil {
			return nil, err
		}
	}
}

// comma consumes the separator after an item, leaving a closing bracket
// for the caller.
func (p *jparser) comma(closer byte) error {
	p.pos = skipSpace(p.src, p.pos)
	if p.pos < len(p.src) && p.src[p.pos] == ',' {
		p.pos++
		return nil
	}
	if p.pos < len(p.src) && p.src[p.pos] == closer {
		return nil
	}
	return p.fail(p.pos, "expected ',' or '%c'", closer)
}

func (p *jparser) str() error {
	start := p.pos
	p.pos++
	for p.pos < len(p.src) {
		switch p.src[p.pos] {
		case '\\':
			p.pos += 2
			continue
		case '"':
			p.pos++
			var s string
			if json.Unmarshal(p.src[start:p.pos], &s) != nil {
				return p.fail(start, "bad string")
			}
			return nil
		case '\n':
			return p.fail(start, "string not closed on its line")
		}
		p.pos++
	}
	return p.fail(start, "string not closed")
}

func isDelim(c byte) bool {
	switch c {
	case ',', '}', ']', ' ', '\t', '\r', '\n', '/', ':':
		return true
	}
	return false
}

// skipSpace returns the offset of the next byte at or after i that is
// neither white space nor inside a comment.
func skipSpace(src []byte, i int) int {
	for i < len(src) {
		switch {
		case src[i] == ' ' || src[i] == '\t' || src[i] == '\r' || src[i] == '\n':
			i++
		case src[i] == '/' && i+1 < len(src) && src[i+1] == '/':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case src[i] == '/' && i+1 < len(src) && src[i+1] == '*':
			end := indexFrom(src, i+2, "*/")
			if end < 0 {
				return len(src)
			}
			i = end + 2
		default:
			return i
		}
	}
	return i
}

func indexFrom(src []byte, from int, sep string) int {
	for i := from; i+len(sep) <= len(src); i++ {
		if string(src[i:i+len(sep)]) == sep {
			return i
		}
	}
	return -1
}

// stripJSONC turns JSONC text into JSON of the same meaning: comments
// and trailing commas become spaces.
func stripJSONC(src []byte) []byte {
	out := make([]byte, len(src))
	copy(out, src)
	for i := 0; i < len(out); {
		switch c := out[i]; {
		case c == '"':
			i++
			for i < len(out) && out[i] != '"' {
				if out[i] == '\\' {
					i++
				}
				i++
			}
			i++
		case c == '/' && i+1 < len(out) && (out[i+1] == '/' || out[i+1] == '*'):
			end := skipSpace(out, i)
			for j := i; j < end; j++ {
				if out[j] != '\n' {
					out[j] = ' '
				}
			}
			i = end
		case c == ',':
			if j := skipSpace(out, i+1); j < len(out) && (out[j] == '}' || out[j] == ']') {
				out[i] = ' '
			}
			i++
		default:
			i++
		}
	}
	return out
}

func clip(b []byte) string {
	if len(b) > 20 {
		return string(b[:20]) + "…"
	}
	return string(b)
}
