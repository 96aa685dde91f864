package endpointfuzz_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meridian-gw/meridian/internal/backend/claude"
	"github.com/meridian-gw/meridian/internal/dispatch"
	"github.com/meridian-gw/meridian/internal/gateway"
	"github.com/meridian-gw/meridian/internal/httpapi"
	"github.com/meridian-gw/meridian/internal/testkit"
)

// fuzzHandler is the whole handler with an in-process stand-in CLI behind
// it, answering "hello world".
func fuzzHandler(f *testing.F) http.Handler {
	driver := claude.New(claude.Config{Path: "in-process", Launcher: testkit.NewInProcessCLI([]string{"hello ", "world"})})
	gw := gateway.New(gateway.Config{Backend: driver, Inspector: driver, Workspace: f.TempDir(), MaxConcurrent: 64})
	f.Cleanup(gw.Close)
	srv, err := httpapi.New(httpapi.Config{Listen: httpapi.Listen{Addr: "127.0.0.1:0", MaxBodyBytes: 1 << 20},
		Models: httpapi.Models{Dispatch: dispatch.New(dispatch.Config{Default: gw})}})
	if err != nil {
		f.Fatal(err)
	}
	return srv.Handler()
}

// seedFiles are the request samples of pattern; none is a mistake.
func seedFiles(f *testing.F, pattern string) []string {
	seeds, err := filepath.Glob(pattern)
	if err != nil || len(seeds) == 0 {
		f.Fatalf("no seed requests at %s (%v)", pattern, err)
	}
	return seeds
}

// FuzzMessagesEndpoint sends arbitrary bodies through the whole handler,
// with an in-process stand-in CLI behind it: no input may panic or earn a
// 5xx. Valid requests are answered (200), everything else is the client's
// error (4xx).
func FuzzMessagesEndpoint(f *testing.F) {
	seeds := seedFiles(f, "../../anthropic/testdata/requests/*.json")
	for _, p := range seeds {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true,"stop_sequences":["wor"]}`))
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"x"}]}`))
	f.Add([]byte(`{`))
	h := fuzzHandler(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, path := range []string{"/v1/messages", "/v1/messages/count_tokens"} {
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
			h.ServeHTTP(rec, req)
			if rec.Code >= 500 {
				t.Fatalf("%s answered %d: %s", path, rec.Code, rec.Body.String())
			}
			if rec.Code != 200 && !bytes.Contains(rec.Body.Bytes(), []byte(`"type":"error"`)) {
				t.Fatalf("%s answered %d without an error envelope: %s", path, rec.Code, rec.Body.String())
			}
		}
	})
}

// FuzzChatEndpoint does the same for chat completions: valid requests are
// answered, everything else is a 4xx in the OpenAI shape. The one 5xx a
// request may earn is the 502 of an answer that does not fit its
// response_format (the stand-in CLI answers in prose).
func FuzzChatEndpoint(f *testing.F) {
	seeds := seedFiles(f, "../../openai/testdata/chat/*.json")
	for _, p := range seeds {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true,"stop":"wor","stream_options":{"include_usage":true}}`))
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"a","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"a","content":"r"}]}`))
	f.Add([]byte(`{`))
	h := fuzzHandler(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/chat/completions", bytes.NewReader(body)))
		out := rec.Body.String()
		if rec.Code >= 500 && (rec.Code != 502 || !strings.Contains(out, "response_format")) {
			t.Fatalf("answered %d: %s", rec.Code, out)
		}
		if rec.Code != 200 && (!strings.HasPrefix(out, `{"error":{"message":`) || strings.Contains(out, `"type":"error"`)) {
			t.Fatalf("answered %d without an OpenAI error envelope: %s", rec.Code, out)
		}
	})
}

// FuzzResponsesEndpoint does the same for the Responses API: answers or
// 4xx in the OpenAI shape; the only 5xx is a response_format mismatch.
func FuzzResponsesEndpoint(f *testing.F) {
	seeds := seedFiles(f, "../../openai/testdata/responses/*.json")
	for _, p := range seeds {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"model":"m","input":"hi","stream":true}`))
	f.Add([]byte(`{"model":"m","input":[{"role":"user","content":"hi"},{"type":"function_call","call_id":"a","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"a","output":"r"}]}`))
	h := fuzzHandler(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/responses", bytes.NewReader(body)))
		out := rec.Body.String()
		if rec.Code >= 500 && (rec.Code != 502 || !strings.Contains(out, "response_format")) {
			t.Fatalf("answered %d: %s", rec.Code, out)
		}
		if rec.Code != 200 && (!strings.HasPrefix(out, `{"error":{"message":`) || strings.Contains(out, `"type":"error"`)) {
			t.Fatalf("answered %d without an OpenAI error envelope: %s", rec.Code, out)
		}
	})
}
