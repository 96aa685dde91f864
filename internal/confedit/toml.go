package confedit

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// TOML applies edits to a TOML document. Each Path is a table's dotted
// name followed by a key; the value is a string, bool or integer. A key
// is changed on its own line and a missing table is appended at the end,
// so comments and unrelated settings stay as they were. A table the file
// defines other than by its own [header] (dotted keys, an inline table)
// is refused rather than rewritten.
func TOML(src []byte, edits []Edit) ([]byte, error) {
	doc, err := decodeTOML(src)
	if err != nil {
		return nil, err
	}
	lines := splitLines(src)
	changed := false
	for _, e := range edits {
		if !e.Drop {
			continue
		}
		if _, exists := tableValue(doc, e.Path); !exists {
			continue
		}
		if lines, err = dropTable(lines, e.Path); err != nil {
			return nil, err
		}
		changed = true
		if doc, err = decodeTOML([]byte(strings.Join(lines, ""))); err != nil {
			return nil, err
		}
	}
	var missing []string // tables to append, in the order first asked for
	appendKeys := map[string][]string{}
	for _, e := range edits {
		if e.Drop {
			continue
		}
		table, key := e.Path[:len(e.Path)-1], e.Path[len(e.Path)-1]
		have, found, err := lookup(doc, table, key)
		if err != nil {
			return nil, err
		}
		if found && sameTOML(have, e.Value) {
			continue
		}
		changed = true
		line, err := renderTOML(key, e.Value)
		if err != nil {
			return nil, err
		}
		name := strings.Join(table, ".")
		lo, hi, ok := tableRegion(lines, table)
		if !ok {
			if _, exists := tableValue(doc, table); exists {
				return nil, &Error{1, fmt.Sprintf("table %s is defined without its own [%s] header; change it by hand", name, name)}
			}
			if _, seen := appendKeys[name]; !seen {
				missing = append(missing, name)
			}
			appendKeys[name] = append(appendKeys[name], line)
			continue
		}
		if found {
			at := keyLine(lines, lo, hi, key)
			if at < 0 || !singleLine(lines[at]) {
				return nil, &Error{max(at, lo) + 1, fmt.Sprintf("%s.%s is not a one-line value here; change it by hand", name, key)}
			}
			lines[at] = leadingSpace(lines[at]) + line + trailingComment(lines[at]) + "\n"
			continue
		}
		at := lastSetting(lines, lo, hi)
		lines = append(lines[:at], append([]string{line + "\n"}, lines[at:]...)...)
	}
	if !changed {
		return src, nil
	}
	out := []byte(strings.Join(lines, ""))
	for _, name := range missing {
		if len(out) > 0 && !bytes.HasSuffix(out, []byte("\n")) {
			out = append(out, '\n')
		}
		if len(bytes.TrimSpace(out)) > 0 {
			out = append(out, '\n')
		}
		out = append(out, fmt.Sprintf("[%s]\n%s\n", name, strings.Join(appendKeys[name], "\n"))...)
	}
	return out, checkTOML(out, edits)
}

// dropTable removes table's header and keys, and the blank line that set
// it apart. A table defined otherwise, or with sub-tables of its own, is
// refused rather than half removed.
func dropTable(lines []string, table []string) ([]string, error) {
	name := strings.Join(table, ".")
	lo, hi, ok := tableRegion(lines, table)
	if !ok {
		return nil, &Error{1, fmt.Sprintf("table %s is defined without its own [%s] header; remove it by hand", name, name)}
	}
	from := lo - 1
	endsBlank := hi > lo && strings.TrimSpace(lines[hi-1]) == ""
	if from > 0 && strings.TrimSpace(lines[from-1]) == "" && !endsBlank {
		from--
	}
	out := append(append([]string{}, lines[:from]...), lines[hi:]...)
	doc, err := decodeTOML([]byte(strings.Join(out, "")))
	if err != nil {
		return nil, err
	}
	if _, still := tableValue(doc, table); still {
		return nil, &Error{lo, fmt.Sprintf("table %s has parts under other headers; remove it by hand", name)}
	}
	return out, nil
}

// ValidTOML reports whether src is well-formed TOML, naming the line of
// the first fault.
func ValidTOML(src []byte) error {
	_, err := decodeTOML(src)
	return err
}

func decodeTOML(src []byte) (map[string]any, error) {
	doc := map[string]any{}
	if err := toml.Unmarshal(src, &doc); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, _ := de.Position()
			return nil, &Error{row, de.Error()}
		}
		return nil, &Error{1, err.Error()}
	}
	return doc, nil
}

func tableValue(doc map[string]any, table []string) (map[string]any, bool) {
	cur := doc
	for _, k := range table {
		next, ok := cur[k].(map[string]any)
		if !ok {
			return nil, false
		}
		cur = next
	}
	return cur, true
}

// lookup finds table.key in doc; a path element that is not a table is
// input in the way of the edit.
func lookup(doc map[string]any, table []string, key string) (any, bool, error) {
	cur := doc
	for i, k := range table {
		v, ok := cur[k]
		if !ok {
			return nil, false, nil
		}
		next, ok := v.(map[string]any)
		if !ok {
			return nil, false, &Error{1, fmt.Sprintf("%s is not a table", strings.Join(table[:i+1], "."))}
		}
		cur = next
	}
	v, ok := cur[key]
	return v, ok, nil
}

func sameTOML(have, want any) bool {
	if w, ok := want.(int); ok {
		want = int64(w)
	}
	return reflect.DeepEqual(have, want)
}

func renderTOML(key string, v any) (string, error) {
	var val string
	switch x := v.(type) {
	case string:
		b, err := marshal(x) // a JSON string is a TOML basic string
		if err != nil {
			return "", err
		}
		val = string(b)
	case bool:
		val = fmt.Sprint(x)
	case int, int64:
		val = fmt.Sprint(x)
	default:
		return "", fmt.Errorf("confedit: a %T cannot be written as a TOML value", v)
	}
	if !bareKey.MatchString(key) {
		b, _ := marshal(key)
		key = string(b)
	}
	return key + " = " + val, nil
}

var (
	bareKey = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	header  = regexp.MustCompile(`^\s*\[\s*([^\[\]]+?)\s*\]\s*(#.*)?$`)
	anyHead = regexp.MustCompile(`^\s*\[`)
)

// tableRegion is the range of lines [lo, hi) holding table's own keys:
// after its header up to the next one; for the root table, before the
// first header.
func tableRegion(lines []string, table []string) (int, int, bool) {
	next := func(from int) int {
		for i := from; i < len(lines); i++ {
			if anyHead.MatchString(lines[i]) && !isContinuation(lines, i) {
				return i
			}
		}
		return len(lines)
	}
	if len(table) == 0 {
		return 0, next(0), true
	}
	for i, l := range lines {
		m := header.FindStringSubmatch(strings.TrimRight(l, "\r\n"))
		if m == nil || isContinuation(lines, i) || !sameName(m[1], table) {
			continue
		}
		return i + 1, next(i + 1), true
	}
	return 0, 0, false
}

// isContinuation reports whether line i starting with '[' is the inside
// of a multi-line array rather than a header: a header follows a line
// that closes what it opened.
func isContinuation(lines []string, i int) bool {
	depth := 0
	for _, l := range lines[:i] {
		if depth == 0 && anyHead.MatchString(l) {
			continue
		}
		depth += bracketDepth(l)
	}
	return depth > 0
}

// bracketDepth is how many more '[' than ']' a line opens outside quotes
// and comments.
func bracketDepth(l string) int {
	d := 0
	var quote byte
	for i := 0; i < len(l); i++ {
		c := l[i]
		switch {
		case quote == '"' && c == '\\':
			i++
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '#':
			return d
		case c == '[':
			d++
		case c == ']':
			d--
		}
	}
	return d
}

func sameName(dotted string, table []string) bool {
	parts := strings.Split(dotted, ".")
	if len(parts) != len(table) {
		return false
	}
	for i, p := range parts {
		if strings.Trim(strings.TrimSpace(p), `"'`) != table[i] {
			return false
		}
	}
	return true
}

func keyLine(lines []string, lo, hi int, key string) int {
	re := regexp.MustCompile(`^\s*("` + regexp.QuoteMeta(key) + `"|'` + regexp.QuoteMeta(key) + `'|` + regexp.QuoteMeta(key) + `)\s*=`)
	for i := lo; i < hi; i++ {
		if re.MatchString(lines[i]) {
			return i
		}
	}
	return -1
}

// singleLine reports whether a key's value ends on its own line.
func singleLine(l string) bool {
	_, v, _ := strings.Cut(l, "=")
	v = strings.TrimSpace(stripComment(v))
	return v != "" && !strings.Contains(v, `"""`) && !strings.Contains(v, "'''") &&
		strings.Count(v, "[") == strings.Count(v, "]") && strings.Count(v, "{") == strings.Count(v, "}")
}

// lastSetting is the line after the region's last non-blank, non-comment
// line, where a new key goes: comments that head the next table stay
// with it.
func lastSetting(lines []string, lo, hi int) int {
	for i := hi - 1; i >= lo; i-- {
		if t := strings.TrimSpace(lines[i]); t != "" && !strings.HasPrefix(t, "#") {
			return i + 1
		}
	}
	return lo
}

func leadingSpace(l string) string { return l[:len(l)-len(strings.TrimLeft(l, " \t"))] }

func trailingComment(l string) string {
	l = strings.TrimRight(l, "\r\n")
	c := stripComment(l)
	if c == l {
		return ""
	}
	return strings.Repeat(" ", len(c)-len(strings.TrimRight(c, " \t"))) + l[len(c):]
}

// stripComment cuts a line at a # outside quotes.
func stripComment(l string) string {
	var quote byte
	for i := 0; i < len(l); i++ {
		c := l[i]
		switch {
		case quote != 0 && c == '\\' && quote == '"':
			i++
		case quote != 0 && c == quote:
			quote = 0
		case quote == 0 && (c == '"' || c == '\''):
			quote = c
		case quote == 0 && c == '#':
			return l[:i]
		}
	}
	return l
}

func splitLines(src []byte) []string {
	if len(src) == 0 {
		return nil
	}
	lines := strings.SplitAfter(string(src), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	} else if !strings.HasSuffix(lines[len(lines)-1], "\n") {
		lines[len(lines)-1] += "\n"
	}
	return lines
}

func checkTOML(src []byte, edits []Edit) error {
	doc, err := decodeTOML(src)
	if err != nil {
		return fmt.Errorf("confedit: the edit left invalid TOML: %w", err)
	}
	for _, e := range edits {
		if e.Drop {
			if _, still := tableValue(doc, e.Path); still {
				return fmt.Errorf("confedit: %s was not removed", strings.Join(e.Path, "."))
			}
			continue
		}
		have, found, _ := lookup(doc, e.Path[:len(e.Path)-1], e.Path[len(e.Path)-1])
		if !found || !sameTOML(have, e.Value) {
			return fmt.Errorf("confedit: %s did not take", strings.Join(e.Path, "."))
		}
	}
	return nil
}
