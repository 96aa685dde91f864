package lineage

// State is what a CLI session is known to hold: the digests of the client
// messages it has seen, oldest first, and for each message the CLI message
// id at which the session can be resumed right after it ("" where it
// cannot: a message that reached the CLI inside a rendered transcript has
// no place of its own). Tail holds the block digests of the last message.
// Slot says that last message is a user message of tool results (a turn
// was cut after the CLI took them): the one message that may gain blocks
// and still be continued.
type State struct {
	Messages []Digest
	Pins     []string
	Tail     []Digest
	Slot     bool
}

// Kind is a verdict's class.
type Kind uint8

// Verdicts.
const (
	// Diverged: nothing the session holds is provably part of the request;
	// start fresh and send the whole conversation.
	Diverged Kind = iota
	// Continuation: the session holds the request's beginning; send the rest.
	Continuation
	// Compaction: the client rewrote the beginning (a summary) but kept the
	// end the session holds; continue after that end.
	Compaction
	// Undo: the client kept a beginning the session holds but changed what
	// followed; fork the session at the last place it can resume inside
	// that beginning and send the rest from there.
	Undo
)

func (k Kind) String() string {
	switch k {
	case Continuation:
		return "continuation"
	case Compaction:
		return "compaction"
	case Undo:
		return "undo"
	}
	return "diverged"
}

// Verdict says how to serve a request on a session in State.
type Verdict struct {
	Kind Kind
	// From is the index of the first request message the session lacks.
	From int
	// Skip is how many leading blocks of message From the session already
	// holds (a trailing message that only gained blocks).
	Skip int
	// Pin is the CLI message the session must stand at before the request
	// is sent ("" for Diverged).
	Pin string
	// AtEnd reports that Pin is the end of what the session holds, so a
	// live process that published State can take the request directly.
	AtEnd bool
	// Matched is how many of the session's last messages a compaction kept.
	Matched int
}

// minCompactionSuffix is how many trailing messages must match before a
// rewritten beginning is taken for a compaction: one exchange.
const minCompactionSuffix = 2

// Classify compares a request's message digests (and the block digests of
// its last message) with what the session holds. Whenever it cannot prove
// that the session holds a part of the request that would not be sent, it
// returns Diverged: history is never skipped on a guess.
func Classify(st State, in []Digest, inTail []Digest) Verdict {
	n := len(st.Messages)
	if n == 0 || len(st.Pins) != n || len(in) == 0 {
		return Verdict{Kind: Diverged}
	}
	end := st.Pins[n-1]
	p := commonPrefix(st.Messages, in)

	// The request extends exactly what the session holds.
	if p == n && len(in) > n && end != "" {
		return Verdict{Kind: Continuation, From: n, Pin: end, AtEnd: true}
	}
	// The session's last message, a user's tool results, only gained
	// blocks in the request: the new blocks follow them. Any other message
	// that changed is an edit.
	if st.Slot && p == n-1 && len(in) == n && end != "" && len(st.Tail) > 0 && len(inTail) > 0 {
		if tail := blocksOf(in, inTail, n-1); isStrictPrefix(st.Tail, tail) {
			return Verdict{Kind: Continuation, From: n - 1, Skip: len(st.Tail), Pin: end, AtEnd: true}
		}
	}
	if v, ok := compaction(st, in, end); ok {
		return v
	}
	// Fork inside the common beginning, at the last place the session can
	// be resumed, and send everything after it.
	for k := min(p, len(in)-1); k >= 1; k-- {
		if st.Pins[k-1] != "" {
			return Verdict{Kind: Undo, From: k, Pin: st.Pins[k-1]}
		}
	}
	return Verdict{Kind: Diverged}
}

// compaction finds the session's last messages at the end of a rewritten
// beginning: the request must start differently, keep at least one whole
// exchange of the session's end, add messages after it, and have fewer
// messages before that end than the session had (a summary shrinks; a
// same-length rewrite is an edit, not a compaction).
func compaction(st State, in []Digest, end string) (Verdict, bool) {
	n := len(st.Messages)
	if end == "" || in[0] == st.Messages[0] {
		return Verdict{}, false
	}
	for j := len(in) - 2; j >= 0; j-- {
		if in[j] != st.Messages[n-1] {
			continue
		}
		s := 0
		for s <= j && s < n && in[j-s] == st.Messages[n-1-s] {
			s++
		}
		start := j - s + 1
		if s >= minCompactionSuffix && start > 0 && start < n-s {
			return Verdict{Kind: Compaction, From: j + 1, Pin: end, AtEnd: true, Matched: s}, true
		}
	}
	return Verdict{}, false
}

func commonPrefix(a, b []Digest) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return i
}

// blocksOf returns the block digests of request message i, which callers
// only have for the last message.
func blocksOf(in []Digest, inTail []Digest, i int) []Digest {
	if i != len(in)-1 {
		return nil
	}
	return inTail
}

func isStrictPrefix(prefix, of []Digest) bool {
	if len(of) <= len(prefix) {
		return false
	}
	for i := range prefix {
		if prefix[i] != of[i] {
			return false
		}
	}
	return true
}

// Advance returns what the session holds once a request's messages were
// sent under verdict v: the request's messages, with the pins the session
// already had for the part it held. Messages sent now get no pins: they
// reach the CLI inside one user message and cannot be resumed between.
func Advance(st State, v Verdict, in []Digest) State {
	out := State{Messages: append([]Digest(nil), in...), Pins: make([]string, len(in))}
	switch v.Kind {
	case Continuation, Undo:
		copy(out.Pins[:v.From], st.Pins[:v.From])
	case Compaction:
		n := len(st.Pins)
		copy(out.Pins[v.From-v.Matched:v.From], st.Pins[n-v.Matched:])
	}
	return out
}

// Append adds a reply to a state: its digest, the pin the session stands
// at after it, and its block digests as the new tail.
func Append(st State, reply Digest, pin string, blocks []Digest) State {
	return State{
		Messages: append(st.Messages, reply),
		Pins:     append(st.Pins, pin),
		Tail:     blocks,
	}
}

// Hold is the state of a session that took a request's last message, its
// tool results, and was cut before it answered: the request's messages,
// the last one resumable at pin and kept as a slot that may gain blocks.
func Hold(st State, v Verdict, in []Digest, pin string, blocks []Digest) State {
	out := Advance(st, v, in)
	out.Pins[len(out.Pins)-1] = pin
	out.Tail, out.Slot = blocks, true
	return out
}
