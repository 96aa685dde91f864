package textstop

import (
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func feedAll(m *Matcher, pieces []string) (out, stop string) {
	var b strings.Builder
	for _, p := range pieces {
		rel, s := m.Feed(p)
		b.WriteString(rel)
		if s != "" {
			return b.String(), s
		}
	}
	b.WriteString(m.Flush())
	return b.String(), ""
}

func TestFeed(t *testing.T) {
	cases := []struct {
		seqs     []string
		pieces   []string
		out, hit string
	}{
		{[]string{"END"}, []string{"hello E", "N", "D and more"}, "hello ", "END"},
		{[]string{"END"}, []string{"hello EN", "X"}, "hello ENX", ""},
		{[]string{"abc", "b"}, []string{"abc"}, "a", "b"},         // "b" completes first
		{[]string{"bc", "abcd"}, []string{"ab", "cd"}, "a", "bc"}, // earliest completion wins
		{[]string{"\n\nHuman:"}, []string{"answer\n", "\nHum", "an: next"}, "answer", "\n\nHuman:"},
		{[]string{"é!"}, []string{"caf", "é", "!"}, "caf", "é!"},
		{nil, []string{"no stops"}, "no stops", ""},
	}
	for _, c := range cases {
		out, hit := feedAll(New(c.seqs), c.pieces)
		if out != c.out || hit != c.hit {
			t.Errorf("%q over %q: got %q/%q, want %q/%q", c.seqs, c.pieces, out, hit, c.out, c.hit)
		}
	}
}

// Only a possible start of a stop sequence is ever held back.
func TestHoldsBackOnlyPrefixes(t *testing.T) {
	m := New([]string{"STOP"})
	if rel, _ := m.Feed("abc ST"); rel != "abc " {
		t.Fatalf("released %q", rel)
	}
	if rel, _ := m.Feed("xyz"); rel != "STxyz" {
		t.Fatalf("released %q", rel)
	}
}

// However the text is cut into pieces, the output is the text up to the
// first completed stop sequence, and that sequence is reported.
func TestChunkingDoesNotMatter(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		alphabet := rapid.SampledFrom([]rune("abcé \n"))
		word := rapid.StringOfN(alphabet, 1, 4, -1)
		seqs := rapid.SliceOfN(word, 0, 3).Draw(t, "seqs")
		text := rapid.StringOfN(alphabet, 0, 40, -1).Draw(t, "text")

		// Reference: the earliest end of any sequence, then the earliest start.
		wantOut, wantStop := text, ""
		bestEnd := -1
		for _, s := range seqs {
			if i := strings.Index(text, s); i >= 0 {
				end := i + len(s)
				if bestEnd < 0 || end < bestEnd || (end == bestEnd && i < len(wantOut)) {
					bestEnd, wantOut, wantStop = end, text[:i], s
				}
			}
		}

		var pieces []string
		for rest := text; rest != ""; {
			n := rapid.IntRange(1, len(rest)).Draw(t, "cut")
			for n < len(rest) && !utf8Start(rest[n]) {
				n++
			}
			pieces = append(pieces, rest[:n])
			rest = rest[n:]
		}
		out, stop := feedAll(New(seqs), pieces)
		if out != wantOut || stop != wantStop {
			t.Fatalf("seqs %q text %q pieces %q: got %q/%q, want %q/%q", seqs, text, pieces, out, stop, wantOut, wantStop)
		}
	})
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }
