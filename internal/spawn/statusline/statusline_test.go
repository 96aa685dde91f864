package statusline

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/testkit"
)

func TestPure(t *testing.T) { testkit.CheckPure(t) }

func TestLine(t *testing.T) {
	c := Child{ID: "p2", Desc: "audit the error handling", Elapsed: 75 * time.Second, Tokens: 12400, LastTool: "Bash", Tools: 3}
	if got, want := Line(c, 0), "p2 running 1:15 · 12.4k tokens · Bash (3 tools) · audit the error handling"; got != want {
		t.Fatalf("line %q, want %q", got, want)
	}
	if got := Line(c, 20); len([]rune(got)) != 20 || !strings.HasSuffix(got, "…") {
		t.Fatalf("cut line %q", got)
	}
}

// On a terminal the block redraws in place (back up over the lines drawn,
// each line cleared) and Clear erases it whole.
func TestTerminalRedrawsInPlace(t *testing.T) {
	var b bytes.Buffer
	l := New(&b, true, 80)
	l.Show([]Child{{ID: "p1"}, {ID: "p2"}})
	if got := b.String(); strings.Contains(got, "\x1b[2A") || strings.Count(got, "\r\x1b[2K") != 2 {
		t.Fatalf("first draw %q", got)
	}
	b.Reset()
	l.Show([]Child{{ID: "p2", Elapsed: time.Second}})
	if got := b.String(); !strings.HasPrefix(got, "\x1b[2A") || !strings.HasSuffix(got, "\x1b[J") || strings.Contains(got, "p1") {
		t.Fatalf("redraw %q", got)
	}
	b.Reset()
	l.Clear()
	if got := b.String(); got != "\x1b[1A\r\x1b[J" {
		t.Fatalf("clear %q", got)
	}
	b.Reset()
	l.Clear() // nothing drawn: nothing written
	if b.Len() != 0 {
		t.Fatalf("a second clear wrote %q", b.String())
	}
}

// Elsewhere: a plain line when a child starts a new tool, no escapes.
func TestPlainOutputPrintsChanges(t *testing.T) {
	var b bytes.Buffer
	l := New(&b, false, 0)
	l.Show([]Child{{ID: "p1"}})
	l.Show([]Child{{ID: "p1", LastTool: "Read"}})
	l.Show([]Child{{ID: "p1", LastTool: "Read", Elapsed: time.Second}})
	l.Show([]Child{{ID: "p1", LastTool: "Bash"}})
	l.Clear()
	if got := b.String(); strings.Count(got, "\n") != 2 || strings.Contains(got, "\x1b") {
		t.Fatalf("plain output %q", got)
	}
}
