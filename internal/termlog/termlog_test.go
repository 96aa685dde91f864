package termlog

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/slogtest"
)

func TestALineForAPerson(t *testing.T) {
	var out bytes.Buffer
	log := slog.New(New(&out, &slog.HandlerOptions{Level: slog.LevelInfo})).With("host", "h1")
	log.Debug("hidden")
	log.Warn("claude went silent", "session", "s-1", "took", "2s")
	log.WithGroup("req").Info("done", "status", 200)
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("got %q", out.String())
	}
	if got := lines[0][9:]; got != "WARN  claude went silent  host=h1 session=s-1 took=2s" {
		t.Errorf("got %q", got)
	}
	if got := lines[1][9:]; got != "INFO  done  host=h1 req.status=200" {
		t.Errorf("got %q", got)
	}
}

// Lines from several goroutines stay whole.
func TestConcurrentLinesStayWhole(t *testing.T) {
	var out bytes.Buffer
	log := slog.New(New(&out, nil))
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 50 {
				log.Info("line", "n", i, "text", strings.Repeat("x", 100))
			}
		})
	}
	wg.Wait()
	for l := range strings.Lines(out.String()) {
		if !strings.Contains(l, "INFO  line  n=") || !strings.HasSuffix(l, strings.Repeat("x", 100)+"\n") {
			t.Fatalf("a torn line: %q", l)
		}
	}
}

// The handler keeps slog's rules (groups, empty attributes, WithAttrs):
// slogtest checks them on what it writes, parsed back.
func TestHandlerRules(t *testing.T) {
	var out bytes.Buffer
	h := New(&out, nil)
	results := func() []map[string]any {
		var ms []map[string]any
		for l := range strings.Lines(out.String()) {
			ms = append(ms, parse(t, strings.TrimSuffix(l, "\n")))
		}
		return ms
	}
	if err := slogtest.TestHandler(h, results); err != nil {
		t.Fatal(err)
	}
}

// parse reads a line back into slogtest's shape: the time (when there is
// one), level and message, then logfmt attributes with dotted groups.
func parse(t *testing.T, line string) map[string]any {
	m := map[string]any{}
	if len(line) > 9 && line[2] == ':' && line[5] == ':' {
		m[slog.TimeKey] = line[:8]
		line = line[9:]
	}
	level, rest, _ := strings.Cut(line, " ")
	m[slog.LevelKey] = level
	rest = strings.TrimLeft(rest, " ")
	msg, attrs, _ := strings.Cut(rest, "  ")
	m[slog.MessageKey] = msg
	for _, kv := range strings.Fields(attrs) {
		k, v, _ := strings.Cut(kv, "=")
		cur := m
		keys := strings.Split(k, ".")
		for _, g := range keys[:len(keys)-1] {
			next, ok := cur[g].(map[string]any)
			if !ok {
				next = map[string]any{}
				cur[g] = next
			}
			cur = next
		}
		cur[keys[len(keys)-1]] = v
	}
	return m
}
