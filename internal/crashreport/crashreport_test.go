package crashreport

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/testkit"
)

func TestImportsFlowDownward(t *testing.T) { testkit.CheckImports(t) }

// A runtime error keeps its message, any other panic value only its type;
// frames are named by package and file, never by the folder built in.
func TestReportHoldsNoRequestDataOrPath(t *testing.T) {
	var stack []byte
	var v any
	func() {
		defer func() { v, stack = recover(), debug.Stack() }()
		var s []int
		_ = s[3]
	}()
	typ, value := describe(v)
	if typ != "runtime.boundsError" || !strings.Contains(value, "index out of range [3] with length 0") {
		t.Fatalf("%s %s", typ, value)
	}
	if typ, value = describe("the prompt: tell me a SECRET"); typ != "string" || strings.Contains(value, "SECRET") {
		t.Fatalf("%s %s", typ, value)
	}
	fs := frames(stack)
	if len(fs) == 0 {
		t.Fatal("no frames")
	}
	last := fs[len(fs)-1]
	if !strings.HasPrefix(last.Filename, "github.com/meridian-gw/meridian/internal/crashreport/") || !last.InApp || last.Lineno == 0 {
		t.Fatalf("innermost frame %+v", last)
	}
	for _, f := range fs {
		if strings.HasPrefix(f.Filename, "/") {
			t.Fatalf("a frame names a local path: %+v", f)
		}
	}
}

// The same panic is reported once an hour; any, once a minute.
func TestReportsAreRateLimited(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		n.Add(1)
	}))
	defer srv.Close()
	r, err := New(strings.Replace(srv.URL, "http://", "http://k@", 1)+"/7", "v1.0.0", nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		r.Panic(fmt.Errorf("boom"), debug.Stack())
	}
	r.Close()
	if n.Load() != 1 {
		t.Fatalf("%d reports for three panics within a minute", n.Load())
	}
	r.mu.Lock()
	r.last = time.Now().Add(-2 * time.Minute)
	r.mu.Unlock()
	r.Panic(fmt.Errorf("boom"), debug.Stack()) // the same one: still within the hour
	r.Close()
	if n.Load() != 1 {
		t.Fatalf("the same panic was sent again within the hour")
	}
	for _, dsn := range []string{"not a url", "ftp://k@h/1", "https://host/1", "https://k@host/"} {
		if _, err := New(dsn, "v", nil); err == nil || strings.Contains(err.Error(), "k@") {
			t.Errorf("%q: %v", dsn, err)
		}
	}
}

// A crash's output: the runtime's own message is kept, a panic value of
// the program's is not; the crashing goroutine's frames, a "created by"
// frame named by its function.
func TestParseCrashOutput(t *testing.T) {
	out := "panic: assignment to entry in nil map\n\ngoroutine 35 [running]:\n" +
		"github.com/meridian-gw/meridian/internal/httpapi.(*Server).routes.func2.1()\n\t/home/someone/src/meridian/internal/httpapi/server.go:450 +0x2e\n" +
		"created by github.com/meridian-gw/meridian/internal/httpapi.(*Server).routes.func2 in goroutine 34\n\t/home/someone/src/meridian/internal/httpapi/server.go:448 +0x1a\n\n" +
		"goroutine 1 [IO wait]:\nmain.main()\n\t/x/main.go:1 +0x1\n"
	typ, value, stack := parseCrash([]byte(out))
	fs := frames(stack)
	if typ != "runtime.Error" || value != "assignment to entry in nil map" || len(fs) != 2 ||
		fs[0].Function != "github.com/meridian-gw/meridian/internal/httpapi.(*Server).routes.func2" || fs[0].Filename != "github.com/meridian-gw/meridian/internal/httpapi/server.go" {
		t.Fatalf("%s %s %+v", typ, value, fs)
	}
	if typ, value, _ := parseCrash([]byte("panic: the user's prompt was SECRET\n\ngoroutine 1 [running]:\n")); typ != "fatal panic" || strings.Contains(value, "SECRET") {
		t.Fatalf("%s %s", typ, value)
	}
	if typ, value, _ := parseCrash([]byte("fatal error: concurrent map writes\n")); typ != "fatal error" || value != "concurrent map writes" {
		t.Fatalf("%s %s", typ, value)
	}
}
