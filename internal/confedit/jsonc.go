// Package confedit changes settings inside a client's configuration text
// (JSON with comments, TOML) and leaves every other byte alone: unrelated
// settings, comments, blank lines and the file's own indentation stay
// where the user put them. It reads and writes no files.
package confedit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// Edit sets the value at Path. With Match set, Path names an array of
// objects and Value is one of them: the element whose Match member equals
// Value's is replaced, or Value is appended when none does. With Drop set
// (TOML only), the table Path names is removed with its header and keys;
// that it is already absent is no change.
type Edit struct {
	Path  []string
	Value any
	Match string
	Drop  bool
}

// Error is input the editor refuses: malformed text or a setting in the
// way of an edit. Line is 1-based.
type Error struct {
	Line int
	Msg  string
}

func (e *Error) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Msg) }

// JSONC applies edits to a JSON document that may hold // and /* */
// comments and trailing commas. A value already equal to the one asked
// for is not rewritten, so applying the same edits twice changes nothing
// the second time. Empty input is an empty object.
func JSONC(src []byte, edits []Edit) ([]byte, error) {
	if len(bytes.TrimSpace(src)) == 0 {
		src = []byte("{\n}\n")
	}
	out := src
	for _, e := range edits {
		root, err := parseJSONC(out)
		if err != nil {
			return nil, err
		}
		if root.kind != '{' {
			return nil, &Error{lineAt(out, root.start), "the file is not a JSON object"}
		}
		if out, err = applyJSONC(out, root, e); err != nil {
			return nil, err
		}
	}
	for _, e := range edits {
		if err := checkJSONC(out, e); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ValidJSONC reports whether src is well-formed JSONC, naming the line of
// the first fault.
func ValidJSONC(src []byte) error {
	if len(bytes.TrimSpace(src)) == 0 {
		return nil
	}
	_, err := parseJSONC(src)
	return err
}

func applyJSONC(src []byte, root *jnode, e Edit) ([]byte, error) {
	obj := root
	for i, k := range e.Path {
		m := obj.member(k)
		last := i == len(e.Path)-1
		if m == nil {
			val := nest(e.Path[i+1:], e.Value)
			if e.Match != "" && last {
				val = []any{e.Value}
			} else if e.Match != "" {
				val = nest(e.Path[i+1:], []any{e.Value})
			}
			return insertMember(src, obj, k, val), nil
		}
		if last {
			if e.Match != "" {
				return upsertElement(src, m.val, strings.Join(e.Path, "."), e)
			}
			if sameJSON(src[m.val.start:m.val.end], e.Value) {
				return src, nil
			}
			return splice(src, m.val.start, m.val.end, render(e.Value, lineIndent(src, m.keyStart), indentUnit(src))), nil
		}
		if m.val.kind != '{' {
			return nil, &Error{lineAt(src, m.val.start), fmt.Sprintf("%q is not an object, so %s cannot be set in it", strings.Join(e.Path[:i+1], "."), strings.Join(e.Path, "."))}
		}
		obj = m.val
	}
	return src, nil
}

// upsertElement replaces or appends e.Value in the array arr.
func upsertElement(src []byte, arr *jnode, name string, e Edit) ([]byte, error) {
	if arr.kind != '[' {
		return nil, &Error{lineAt(src, arr.start), fmt.Sprintf("%q is not an array", name)}
	}
	want, err := toGeneric(e.Value)
	if err != nil {
		return nil, err
	}
	key := want.(map[string]any)[e.Match]
	for _, el := range arr.elems {
		if el.kind != '{' {
			continue
		}
		m := el.member(e.Match)
		if m == nil || !sameJSON(src[m.val.start:m.val.end], key) {
			continue
		}
		if sameJSON(src[el.start:el.end], e.Value) {
			return src, nil
		}
		return splice(src, el.start, el.end, render(e.Value, lineIndent(src, el.start), indentUnit(src))), nil
	}
	return insertElement(src, arr, e.Value), nil
}

// nest wraps v in one object per remaining path element.
func nest(path []string, v any) any {
	for i := len(path) - 1; i >= 0; i-- {
		v = Obj{{path[i], v}}
	}
	return v
}

// insertMember adds "k": v as obj's last member, in the layout of the
// members around it.
func insertMember(src []byte, obj *jnode, k string, v any) []byte {
	kq, _ := marshal(k)
	return insertItem(src, obj, func(indent string) string {
		return string(kq) + ": " + render(v, indent, indentUnit(src))
	}, len(obj.members) == 0, lastEnd(obj))
}

func insertElement(src []byte, arr *jnode, v any) []byte {
	return insertItem(src, arr, func(indent string) string {
		return render(v, indent, indentUnit(src))
	}, len(arr.elems) == 0, lastEnd(arr))
}

func lastEnd(n *jnode) int {
	switch {
	case len(n.members) > 0:
		return n.members[len(n.members)-1].val.end
	case len(n.elems) > 0:
		return n.elems[len(n.elems)-1].end
	}
	return -1
}

// insertItem writes an item into the container n: after its last item,
// or as its only one. A container written on one line stays on one line.
func insertItem(src []byte, n *jnode, item func(indent string) string, empty bool, after int) []byte {
	outer := lineIndent(src, n.start)
	if empty {
		inner := src[n.start+1 : n.end-1]
		if lineAt(src, n.start) == lineAt(src, n.end-1) && len(bytes.TrimSpace(inner)) == 0 {
			return splice(src, n.start+1, n.end-1, item(outer))
		}
		child := outer + indentUnit(src)
		text := "\n" + child + item(child)
		if len(bytes.TrimSpace(inner)) == 0 {
			return splice(src, n.start+1, n.end-1, text+"\n"+outer)
		}
		return splice(src, n.start+1, n.start+1, text)
	}
	first := n.firstStart()
	if lineAt(src, first) == lineAt(src, n.start) {
		return splice(src, after, after, ", "+item(outer))
	}
	child := lineIndent(src, first)
	if comma := trailingComma(src, after); comma >= 0 {
		at := restOfLine(src, comma+1)
		return splice(src, at, at, "\n"+child+item(child)+",")
	}
	at := restOfLine(src, after)
	out := splice(src, at, at, "\n"+child+item(child))
	return splice(out, after, after, ",")
}

// restOfLine is where a new line goes after off: past a comment that
// ends the line there, so the comment stays with what it annotates.
func restOfLine(src []byte, off int) int {
	eol := bytes.IndexByte(src[off:], '\n')
	if eol < 0 {
		return off
	}
	rest := bytes.TrimSpace(src[off : off+eol])
	if len(rest) == 0 || bytes.HasPrefix(rest, []byte("//")) {
		return off + eol
	}
	return off
}

// trailingComma is the offset of a comma after the last item at off, or
// -1 when the container closes without one.
func trailingComma(src []byte, off int) int {
	i := skipSpace(src, off)
	if i < len(src) && src[i] == ',' {
		return i
	}
	return -1
}

func splice(src []byte, from, to int, text string) []byte {
	out := make([]byte, 0, len(src)+len(text))
	out = append(out, src[:from]...)
	out = append(out, text...)
	return append(out, src[to:]...)
}

// render writes v as indented JSON whose continuation lines start at
// indent, the first line being placed by the caller.
func render(v any, indent, unit string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent(indent, unit)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("confedit: value does not encode: %v", err))
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	err := enc.Encode(v)
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), err
}

// sameJSON reports whether the JSONC text equals v as JSON data.
func sameJSON(text []byte, v any) bool {
	var have any
	if err := json.Unmarshal(stripJSONC(text), &have); err != nil {
		return false
	}
	want, err := toGeneric(v)
	return err == nil && reflect.DeepEqual(have, want)
}

func toGeneric(v any) (any, error) {
	b, err := marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	return out, json.Unmarshal(b, &out)
}

// checkJSONC confirms that the edited text says what the edit asked.
func checkJSONC(src []byte, e Edit) error {
	var doc any
	if err := json.Unmarshal(stripJSONC(src), &doc); err != nil {
		return fmt.Errorf("confedit: the edit left invalid JSON: %w", err)
	}
	for _, k := range e.Path {
		m, ok := doc.(map[string]any)
		if !ok {
			return fmt.Errorf("confedit: %s did not take", strings.Join(e.Path, "."))
		}
		doc = m[k]
	}
	want, _ := toGeneric(e.Value)
	if e.Match != "" {
		arr, _ := doc.([]any)
		for _, el := range arr {
			if reflect.DeepEqual(el, want) {
				return nil
			}
		}
	} else if reflect.DeepEqual(doc, want) {
		return nil
	}
	return fmt.Errorf("confedit: %s did not take", strings.Join(e.Path, "."))
}

// indentUnit is the file's own indentation step: that of its first
// indented line, two spaces when it has none.
func indentUnit(src []byte) string {
	for _, line := range bytes.Split(src, []byte("\n")) {
		trimmed := bytes.TrimLeft(line, " \t")
		if n := len(line) - len(trimmed); n > 0 && len(trimmed) > 0 {
			return string(line[:n])
		}
	}
	return "  "
}

// lineIndent is the leading white space of the line holding off.
func lineIndent(src []byte, off int) string {
	start := bytes.LastIndexByte(src[:off], '\n') + 1
	end := start
	for end < len(src) && (src[end] == ' ' || src[end] == '\t') {
		end++
	}
	return string(src[start:end])
}

func lineAt(src []byte, off int) int {
	return bytes.Count(src[:min(off, len(src))], []byte("\n")) + 1
}

// Obj is a JSON object that keeps its members in the order given, so
// what setup writes reads in a sensible order.
type Obj []KV

// KV is one member of an Obj.
type KV struct {
	Key   string
	Value any
}

// MarshalJSON writes the members in order.
func (o Obj) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, kv := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := marshal(kv.Key)
		if err != nil {
			return nil, err
		}
		v, err := marshal(kv.Value)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
