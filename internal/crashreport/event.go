package crashreport

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"regexp"
	"runtime"
	"strconv"
	"strings"
)

// A crash report carries the panic's kind, the stack and the version, and
// nothing a request brought: a runtime error's own message (an index out
// of range, a nil pointer) says nothing of a prompt, and any other panic
// value is named by its type alone. File names are cut to their module
// path (or the file's name): no local folder reaches the report.

// Frame is one stack frame, oldest first as Sentry wants them.
type Frame struct {
	Function string `json:"function"`
	Module   string `json:"module,omitempty"`
	Filename string `json:"filename"`
	Lineno   int    `json:"lineno"`
	InApp    bool   `json:"in_app"`
}

// describe is what may be said of a panic value: its type and, for a
// runtime error, its message.
func describe(v any) (typ, value string) {
	var re runtime.Error
	if err, ok := v.(error); ok && errors.As(err, &re) {
		return fmt.Sprintf("%T", re), re.Error()
	}
	return fmt.Sprintf("%T", v), "a panic whose value is not reported (it may hold request data)"
}

// frameLine is a stack trace's file line: a tab, the path, the line
// number, an optional offset.
var frameLine = regexp.MustCompile(`^\t(.+):(\d+)(?: \+0x[0-9a-f]+)?$`)

// frames reads a debug.Stack trace into frames, oldest first, leaving out
// the panic machinery.
func frames(stack []byte) []Frame {
	lines := strings.Split(string(bytes.TrimSpace(stack)), "\n")
	var out []Frame
	for i := 1; i+1 < len(lines); i += 2 {
		fn := lines[i]
		m := frameLine.FindStringSubmatch(lines[i+1])
		if m == nil {
			i-- // a line out of step: resynchronise on the next
			continue
		}
		if creator, ok := strings.CutPrefix(fn, "created by "); ok {
			fn, _, _ = strings.Cut(creator, " in goroutine ")
		} else if j := strings.LastIndex(fn, "("); j > 0 && strings.HasSuffix(fn, ")") {
			fn = fn[:j] // the arguments
		}
		if strings.HasPrefix(fn, "runtime/debug.Stack") || strings.HasPrefix(fn, "panic") {
			continue
		}
		line, _ := strconv.Atoi(m[2])
		module, file := scrub(fn, m[1])
		out = append(out, Frame{Function: fn, Module: module, Filename: file, Lineno: line,
			InApp: strings.HasPrefix(fn, "github.com/meridian-gw/meridian/")})
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// scrub names a frame's file by its package's import path (read from
// the function's name) and the file's name: the folder the source was
// built in never reaches the report.
func scrub(fn, file string) (module, name string) {
	base := path.Base(strings.ReplaceAll(file, "\\", "/"))
	slash := strings.LastIndex(fn, "/")
	pkg := fn
	if dot := strings.Index(fn[slash+1:], "."); dot >= 0 {
		pkg = fn[:slash+1+dot]
	}
	return pkg, pkg + "/" + base
}
