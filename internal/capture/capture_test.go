package capture

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/meridian-gw/meridian/internal/telemetry"
)

func TestRedactFindsSecretsByTheirShape(t *testing.T) {
	r := NewRedactor("admin-SECRET-key-123")
	for _, c := range []struct{ in, want string }{
		{"my key is sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv please", "my key is [REDACTED] please"},
		{"openai sk-proj-0123456789abcdefghijABCD.", "openai [REDACTED]."},
		{"meridian mk-ABCDEFGHIJKLMNOPQRSTUVWXYZ and more", "meridian [REDACTED] and more"},
		{"Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.e30.abc", "Authorization: Bearer [REDACTED]"},
		{"curl -H 'authorization: bearer abcdefghijklmnop'", "curl -H 'authorization: bearer [REDACTED]'"},
		{"token ghp_abcdefghijklmnopqrstuvwxyz0123", "token [REDACTED]"},
		{"aws AKIAABCDEFGHIJKLMNOP done", "aws [REDACTED] done"},
		{`{"api_key": "hunter2", "model": "x"}`, `{"api_key": "[REDACTED]", "model": "x"}`},
		{`{"password":"a\"b"}`, `{"password":"[REDACTED]"}`},
		{"the admin key admin-SECRET-key-123!", "the admin key [REDACTED]!"},
		{"-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----\nafter", "[REDACTED]\nafter"},
		// Not secrets: words that hold a prefix, short tails.
		{"a task-list of risk-free things", "a task-list of risk-free things"},
		{"sk-short", "sk-short"},
		{"the bearer of news", "the bearer of news"},
	} {
		if got := string(r.Redact([]byte(c.in))); got != c.want {
			t.Errorf("Redact(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestRedactLeavesItsInputAlone(t *testing.T) {
	in := []byte("x sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv y")
	orig := bytes.Clone(in)
	_ = NewRedactor().Redact(in)
	if !bytes.Equal(in, orig) {
		t.Fatal("Redact changed its input")
	}
}

func TestDraftKeepsWhatItsModeSays(t *testing.T) {
	h := http.Header{"X-Api-Key": {"mk-ABCDEFGHIJKLMNOPQRSTUVWXYZ"}, "User-Agent": {"codex"}}
	body := []byte(`{"model":"m","messages":[{"role":"user","content":"use sk-ant-oat01-AbCdEfGhIjKlMnOpQrStUv"}]}`)
	rec := telemetry.Record{API: "messages", Model: "m", Status: 200}
	r := NewRedactor()

	off := NewDraft(Off, h)
	off.Request(body)
	if _, ok := off.Finish(rec, r); ok {
		t.Fatal("off kept a capture")
	}

	meta := NewDraft(Metadata, h)
	meta.Request(body)
	meta.Wrote(map[string]string{"content": "x"})
	meta.Answer([]byte("hello"))
	c, ok := meta.Finish(rec, r)
	if !ok || c.Request != nil || c.Written != nil || c.Answer != "" || c.AnswerBytes != 5 || c.Headers["X-Api-Key"] != Redacted || c.Headers["User-Agent"] != "codex" {
		t.Fatalf("metadata: %+v", c)
	}

	full := NewDraft(Metadata, h)
	full.SetMode(Content) // the key's own setting
	full.Request(body)
	full.Wrote(map[string]any{"content": []string{"use sk-ant-oat01-AbCdEfGhIjKlMnOpQrStUv"}})
	full.Answer([]byte("data: ok\n\n"))
	c, ok = full.Finish(rec, r)
	all, _ := json.Marshal(c)
	if !ok || strings.Contains(string(all), "AbCdEfGhIjKl") || strings.Contains(string(all), "mk-ABCDEF") {
		t.Fatalf("a secret was kept: %s", all)
	}
	if !json.Valid(c.Request) || !strings.Contains(string(c.Request), "use [REDACTED]") || len(c.Written) != 1 || c.Answer != "data: ok\n\n" || c.RequestBytes != int64(len(body)) {
		t.Fatalf("content: %s", all)
	}
}

func TestDraftCutsEachPartAtItsBound(t *testing.T) {
	d := NewDraft(Content, nil)
	big := bytes.Repeat([]byte("a"), MaxPart+10)
	d.Request(big)
	d.Answer(big[:MaxPart])
	d.Answer([]byte("more"))
	c, _ := d.Finish(telemetry.Record{}, NewRedactor())
	if len(c.Answer) != MaxPart || c.AnswerBytes != MaxPart+4 || c.RequestBytes != MaxPart+10 || strings.Join(c.Cut, ",") != "answer,request" {
		t.Fatalf("answer %d bytes of %d, request %d, cut %v", len(c.Answer), c.AnswerBytes, c.RequestBytes, c.Cut)
	}
	var s string
	if json.Unmarshal(c.Request, &s) != nil || len(s) != MaxPart {
		t.Fatal("a cut request is not kept as text of the bound")
	}
}

func TestANilDraftDoesNothing(t *testing.T) {
	var d *Draft
	d.SetMode(Content)
	d.Request([]byte("x"))
	d.Wrote("x")
	d.Answer([]byte("x"))
	if _, ok := d.Finish(telemetry.Record{}, NewRedactor()); ok || d.Mode() != Off {
		t.Fatal("a nil draft kept something")
	}
}

func BenchmarkRedact100KB(b *testing.B) {
	text := strings.Repeat("The quick brown fox jumps over the lazy dog; a task-list item. ", 1600)[:100_000]
	body, _ := json.Marshal(map[string]any{"model": "m", "messages": []any{map[string]any{"role": "user", "content": text}}})
	r := NewRedactor("admin-SECRET-key-123")
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		_ = r.Redact(body)
	}
}
