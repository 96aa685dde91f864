package testkit

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// ioPackages are the standard library packages through which a package
// does I/O; a pure package imports none of them.
var ioPackages = []string{
	"database/sql", "io/fs", "io/ioutil", "log", "log/slog", "net", "net/http", "net/rpc", "os", "os/exec",
	"os/signal", "path/filepath", "plugin", "runtime/cgo", "syscall", "time/tzdata", "unsafe",
}

// CheckPure fails the test if the package in the working directory
// imports, outside its tests, an I/O package of the standard library or
// any module package that allow does not name.
func CheckPure(t *testing.T, allow ...string) {
	t.Helper()
	checkImports(t, true, allow)
}

// CheckImports fails the test if the package in the working directory
// imports, outside its tests, a module package that allow does not name:
// dependencies flow downward only.
func CheckImports(t *testing.T, allow ...string) {
	t.Helper()
	checkImports(t, false, allow)
}

func checkImports(t *testing.T, pure bool, allow []string) {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	const module = "github.com/meridian-gw/meridian/"
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		parsed, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range parsed.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			std := !strings.Contains(strings.SplitN(path, "/", 2)[0], ".")
			switch {
			case std && pure && slices.Contains(ioPackages, path):
				t.Errorf("%s imports %s: a pure package does no I/O", f, path)
			case !std && !slices.Contains(allow, strings.TrimPrefix(path, module)):
				t.Errorf("%s imports %s, which its import rule does not allow", f, path)
			}
		}
	}
}
