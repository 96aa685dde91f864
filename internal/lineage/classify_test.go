package lineage

import (
	"fmt"
	"testing"

	"pgregory.net/rapid"
)

// d makes distinct digests from small numbers.
func d(ns ...int) []Digest {
	out := make([]Digest, len(ns))
	for i, n := range ns {
		out[i][0], out[i][1] = byte(n), byte(n>>8)
		out[i][15] = 1
	}
	return out
}

// state is a session holding ns, with pins after every odd position (the
// assistant replies of alternating user/assistant turns).
func state(ns ...int) State {
	st := State{Messages: d(ns...), Pins: make([]string, len(ns))}
	for i := 1; i < len(ns); i += 2 {
		st.Pins[i] = fmt.Sprintf("uuid-%d", i)
	}
	return st
}

func TestClassify(t *testing.T) {
	cases := []struct {
		name string
		st   State
		in   []Digest
		want Verdict
	}{
		{"empty state", State{}, d(1), Verdict{Kind: Diverged}},
		{"continuation", state(1, 2), d(1, 2, 3), Verdict{Kind: Continuation, From: 2, Pin: "uuid-1", AtEnd: true}},
		{"continuation by several", state(1, 2, 3, 4), d(1, 2, 3, 4, 5, 6, 7), Verdict{Kind: Continuation, From: 4, Pin: "uuid-3", AtEnd: true}},
		{"undo last exchange", state(1, 2, 3, 4), d(1, 2, 9), Verdict{Kind: Undo, From: 2, Pin: "uuid-1"}},
		{"edited last question", state(1, 2, 3, 4), d(1, 2, 9, 4, 5), Verdict{Kind: Undo, From: 2, Pin: "uuid-1"}},
		{"edited first message", state(1, 2, 3, 4), d(9, 2, 3, 4, 5), Verdict{Kind: Diverged}},
		{"compaction", state(1, 2, 3, 4, 5, 6), d(7, 5, 6, 8), Verdict{Kind: Compaction, From: 3, Pin: "uuid-5", AtEnd: true, Matched: 2}},
		{"compaction of two into one", state(1, 2, 3, 4, 5, 6), d(7, 3, 4, 5, 6, 8), Verdict{Kind: Compaction, From: 5, Pin: "uuid-5", AtEnd: true, Matched: 4}},
		{"suffix after a longer beginning is no compaction", state(1, 2, 3, 4), d(7, 8, 9, 10, 3, 4, 5), Verdict{Kind: Diverged}},
		// A summary replaces the beginning; a request that keeps the
		// first message rewrote the middle, which is resumed before.
		{"a rewrite that keeps the first message is no compaction", state(1, 2, 3, 4, 5, 6), d(1, 2, 9, 5, 6, 8), Verdict{Kind: Undo, From: 2, Pin: "uuid-1"}},
		{"one shared message is no compaction", state(1, 2, 3, 4), d(7, 4, 5), Verdict{Kind: Diverged}},
		{"unrelated", state(1, 2), d(3, 4, 5), Verdict{Kind: Diverged}},
		{"no pin inside the prefix", State{Messages: d(1, 2, 3, 4), Pins: []string{"", "", "", "end"}}, d(1, 2, 9), Verdict{Kind: Diverged}},
	}
	for _, c := range cases {
		if got := Classify(c.st, c.in, nil); got != c.want {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
	}
}

// A session whose last message is a user's tool results it took (a slot)
// continues a request in which that message only gained blocks: the new
// ones are sent. An edited block, or a message that is no such slot (an
// answer the client dropped and wrote over, an ordinary user message),
// is an edit.
func TestTrailingSlotThatGainedBlocks(t *testing.T) {
	st := State{Messages: d(1, 2, 3), Pins: []string{"", "p1", "p2"}, Tail: d(100, 101), Slot: true}
	in := d(1, 2, 33) // the last message changed...
	got := Classify(st, in, d(100, 101, 102))
	want := Verdict{Kind: Continuation, From: 2, Skip: 2, Pin: "p2", AtEnd: true}
	if got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	// ...but an edited block is not an append.
	if got := Classify(st, in, d(100, 199, 102)); got.Kind != Undo {
		t.Fatalf("edited tail: got %+v", got)
	}
	// A tail that is no slot (an assistant's answer, whose blocks a user
	// message repeats) is never continued as if the client had it.
	noSlot := st
	noSlot.Slot = false
	if got := Classify(noSlot, in, d(100, 101, 102)); got.Kind == Continuation {
		t.Fatalf("a tail that is no slot was continued: %+v", got)
	}
	// Messages after the slot are no gain of it.
	if got := Classify(st, d(1, 2, 33, 4), d(5)); got.Kind == Continuation && got.Skip > 0 {
		t.Fatalf("a request past the slot skipped blocks: %+v", got)
	}
}

// Hold records a cut turn's slot: the request's messages, the last one
// resumable at the pin the CLI gave its results, its blocks the tail.
func TestHold(t *testing.T) {
	st := State{Messages: d(1, 2), Pins: []string{"", "pending:x"}, Tail: d(7)}
	v := Verdict{Kind: Continuation, From: 2, Pin: "pending:x", AtEnd: true}
	got := Hold(st, v, d(1, 2, 3), "u3", d(30, 31))
	if len(got.Messages) != 3 || got.Pins[1] != "pending:x" || got.Pins[2] != "u3" || !got.Slot || len(got.Tail) != 2 {
		t.Fatalf("held %+v", got)
	}
}

// Whatever the verdict, the messages before From are held by the session:
// exactly (continuation, undo), or as the session's own end (compaction).
// Nothing the session lacks is ever skipped.
func TestNeverSkipsHistory(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		alphabet := rapid.IntRange(0, 5)
		stored := rapid.SliceOfN(alphabet, 1, 8).Draw(t, "stored")
		st := State{Messages: d(stored...), Pins: make([]string, len(stored))}
		for i := range stored {
			if rapid.Bool().Draw(t, "pinned") {
				st.Pins[i] = fmt.Sprintf("pin-%d", i)
			}
		}
		in := d(rapid.SliceOfN(alphabet, 1, 10).Draw(t, "in")...)
		v := Classify(st, in, nil)
		if v.From < 0 || v.From > len(in)-1 && v.Kind != Diverged {
			t.Fatalf("From %d out of range for %d messages: %+v", v.From, len(in), v)
		}
		switch v.Kind {
		case Diverged:
			if v.From != 0 || v.Pin != "" {
				t.Fatalf("diverged must send everything: %+v", v)
			}
		case Continuation, Undo:
			if v.From > len(st.Messages) {
				t.Fatalf("%+v skips past what the session holds", v)
			}
			for i := 0; i < v.From; i++ {
				if in[i] != st.Messages[i] {
					t.Fatalf("%+v skips message %d, which the session does not hold", v, i)
				}
			}
			if v.Pin != st.Pins[v.From-1] || v.Pin == "" {
				t.Fatalf("%+v resumes somewhere other than after message %d", v, v.From-1)
			}
		case Compaction:
			n := len(st.Messages)
			if in[v.From-1] != st.Messages[n-1] || in[v.From-2] != st.Messages[n-2] || v.Pin != st.Pins[n-1] {
				t.Fatalf("%+v does not continue after the session's end", v)
			}
		}
	})
}

func TestExtensionIsAlwaysAContinuation(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		stored := rapid.SliceOfN(rapid.IntRange(0, 50), 1, 10).Draw(t, "stored")
		more := rapid.SliceOfN(rapid.IntRange(0, 50), 1, 5).Draw(t, "more")
		st := state(stored...)
		st.Pins[len(stored)-1] = "end"
		v := Classify(st, d(append(append([]int{}, stored...), more...)...), nil)
		if v.Kind != Continuation || v.From != len(stored) || !v.AtEnd || v.Pin != "end" {
			t.Fatalf("got %+v", v)
		}
	})
}

func FuzzClassify(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4}, []byte{1, 2, 3, 4, 5}, []byte{0, 1, 0, 1})
	f.Add([]byte{1, 2, 3, 4, 5, 6}, []byte{7, 5, 6, 8}, []byte{0, 1, 0, 1, 0, 1})
	f.Fuzz(func(t *testing.T, stored, in, pins []byte) {
		if len(stored) > 64 || len(in) > 64 {
			return
		}
		st := State{Messages: make([]Digest, len(stored)), Pins: make([]string, len(stored))}
		for i, b := range stored {
			st.Messages[i][0] = b
			if i < len(pins) && pins[i]%2 == 1 {
				st.Pins[i] = fmt.Sprint(i)
			}
		}
		inD := make([]Digest, len(in))
		for i, b := range in {
			inD[i][0] = b
		}
		v := Classify(st, inD, nil)
		if v.Kind != Diverged && (v.From < 1 || v.From >= len(in) || v.Pin == "") {
			t.Fatalf("bad verdict %+v for %d messages", v, len(in))
		}
	})
}

func TestAdvanceKeepsPinsOfWhatTheSessionHeld(t *testing.T) {
	st := state(1, 2, 3, 4, 5, 6) // pins at 1, 3, 5
	cases := []struct {
		in   []Digest
		pins []string
	}{
		{d(1, 2, 3, 4, 5, 6, 7), []string{"", "uuid-1", "", "uuid-3", "", "uuid-5", ""}}, // continuation
		{d(1, 2, 9), []string{"", "uuid-1", ""}},                                         // undo
		{d(7, 3, 4, 5, 6, 8), []string{"", "", "uuid-3", "", "uuid-5", ""}},              // compaction keeps the suffix's pins
		{d(9, 8, 7), []string{"", "", ""}},                                               // diverged
	}
	for _, c := range cases {
		v := Classify(st, c.in, nil)
		got := Advance(st, v, c.in)
		if fmt.Sprint(got.Pins) != fmt.Sprint(c.pins) || len(got.Messages) != len(c.in) {
			t.Errorf("%v (%s): pins %q, want %q", c.in, v.Kind, got.Pins, c.pins)
		}
	}
	next := Append(Advance(st, Classify(st, d(1, 2, 3, 4, 5, 6, 7), nil), d(1, 2, 3, 4, 5, 6, 7)), d(8)[0], "uuid-7", d(80, 81))
	if v := Classify(next, d(1, 2, 3, 4, 5, 6, 7, 8, 9), nil); v.Kind != Continuation || v.Pin != "uuid-7" || v.From != 8 {
		t.Fatalf("after append: %+v", v)
	}
}
