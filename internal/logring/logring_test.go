package logring

import (
	"strings"
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

func TestImportsFlowDownward(t *testing.T) { testkit.CheckImports(t) }

func TestRingKeepsTheLastLines(t *testing.T) {
	r := New(3)
	_, _ = r.Write([]byte("one\ntwo\nthr"))
	_, _ = r.Write([]byte("ee\nfour\n"))
	if got := strings.Join(r.Lines(), ","); got != "two,three,four" {
		t.Fatalf("lines %q", got)
	}
	_, _ = r.Write([]byte(strings.Repeat("x", 3*MaxLineBytes) + "\n"))
	last := r.Lines()[2]
	if len(last) > MaxLineBytes+len(truncatedMark) || !strings.HasSuffix(last, truncatedMark) {
		t.Fatalf("a long line kept %d bytes", len(last))
	}
}
