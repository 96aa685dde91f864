package gateway

import (
	"fmt"
	"testing"
)

// The conversations dropped from their session are remembered by session,
// up to a bound, the oldest forgotten first.
func TestDroppedRemembersTheLatest(t *testing.T) {
	var d dropped
	d.add("a", "s1")
	if !d.has("a", "s1") || d.has("a", "s2") || d.has("b", "s1") {
		t.Fatal("a dropped conversation is known by its key and session")
	}
	for i := range maxDropped {
		d.add(fmt.Sprint("k", i), "s")
	}
	if d.has("a", "s1") || !d.has("k0", "s") || !d.has(fmt.Sprint("k", maxDropped-1), "s") {
		t.Fatal("past the bound the oldest is forgotten, the rest kept")
	}
	d.add("k0", "s2") // dropped again from a later session
	if !d.has("k0", "s2") || len(d.order) != maxDropped {
		t.Fatalf("a conversation dropped twice is kept once (%d kept)", len(d.order))
	}
}
