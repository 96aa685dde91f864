// Package textstop finds stop sequences in text that arrives in pieces, the
// way stop_sequences ends generation in the Messages API. It is pure.
package textstop

import "strings"

// Matcher withholds only the text that could still begin a stop sequence,
// so everything else streams on without delay.
type Matcher struct {
	seqs []string
	held string
}

// New returns a matcher for the given sequences; empty ones are ignored.
func New(seqs []string) *Matcher {
	m := &Matcher{}
	for _, s := range seqs {
		if s != "" {
			m.seqs = append(m.seqs, s)
		}
	}
	return m
}

// Active reports whether there is anything to match.
func (m *Matcher) Active() bool { return len(m.seqs) > 0 }

// Feed takes the next piece of text and returns what may be released now.
// When a stop sequence completes, stop names it and release ends right
// before it; generation should end there. Of overlapping candidates the one
// completed first wins, as generation would have stopped there.
func (m *Matcher) Feed(s string) (release, stop string) {
	buf := m.held + s
	m.held = ""
	bestEnd, bestStart := -1, 0
	for _, seq := range m.seqs {
		if i := strings.Index(buf, seq); i >= 0 {
			if end := i + len(seq); bestEnd < 0 || end < bestEnd || (end == bestEnd && i < bestStart) {
				bestEnd, bestStart, stop = end, i, seq
			}
		}
	}
	if bestEnd >= 0 {
		return buf[:bestStart], stop
	}
	k := m.pendingPrefix(buf)
	m.held = buf[len(buf)-k:]
	return buf[:len(buf)-k], ""
}

// Flush releases withheld text; call it when the text ends without a stop.
func (m *Matcher) Flush() string {
	h := m.held
	m.held = ""
	return h
}

// pendingPrefix is the length of the longest suffix of buf that is a proper
// prefix of some stop sequence.
func (m *Matcher) pendingPrefix(buf string) int {
	best := 0
	for _, seq := range m.seqs {
		for k := min(len(seq)-1, len(buf)); k > best; k-- {
			if strings.HasSuffix(buf, seq[:k]) {
				best = k
				break
			}
		}
	}
	return best
}
