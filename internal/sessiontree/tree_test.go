package sessiontree

import (
	"slices"
	"testing"
)

func TestCancelReachesDescendantsOnly(t *testing.T) {
	tr := New()
	var aborted []string
	enter := func(key, parent string) func() {
		return tr.Enter("", key, parent, func() { aborted = append(aborted, key) })
	}
	enter("lead", "")
	enter("lead#a", "lead")
	enter("lead#b", "lead")
	enter("grandchild", "lead#a")
	enter("other", "")
	leave := enter("sibling-of-lead", "root")

	got := tr.Cancel("lead")
	if !slices.Equal(got, []string{"grandchild", "lead", "lead#a", "lead#b"}) {
		t.Fatalf("cancelled %v", got)
	}
	slices.Sort(aborted)
	if !slices.Equal(aborted, got) {
		t.Fatalf("aborted %v", aborted)
	}
	// A child's cancel does not reach up.
	aborted = nil
	enter("lead#c", "lead")
	if got := tr.Cancel("lead#c"); !slices.Equal(got, []string{"lead#c"}) || !slices.Equal(aborted, []string{"lead#c"}) {
		t.Fatalf("a child's cancel reached %v", got)
	}
	// What was aborted is not aborted again, nor reported.
	if got := tr.Cancel("lead"); len(got) != 0 || len(aborted) != 1 {
		t.Fatalf("a second cancel aborted %v", got)
	}
	// A request that left is no target.
	leave()
	if got := tr.Cancel("root"); len(got) != 0 {
		t.Fatalf("cancelled %v under a conversation with nothing live", got)
	}
	g, per := tr.Stats("")
	if g.Requests != 6 || g.Linked != 4 || g.Cancelled != 5 || per["lead"] != 1 {
		t.Fatalf("stats %+v %v", g, per)
	}
}

// Links are the clients' word: a cycle does not hang a cancel.
func TestCyclesAreBounded(t *testing.T) {
	tr := New()
	n := 0
	tr.Enter("", "a", "b", func() { n++ })
	tr.Enter("", "b", "a", func() { n++ })
	if got := tr.Cancel("c"); len(got) != 0 || n != 0 {
		t.Fatalf("a cycle reached %v", got)
	}
	if got := tr.Cancel("a"); len(got) != 2 {
		t.Fatalf("cancel in a cycle: %v", got)
	}
}

// A client that leaves one request of a conversation cancels what runs
// below it, never its own next request.
func TestCancelBelowSparesTheConversationItself(t *testing.T) {
	tr := New()
	var aborted []string
	for _, kp := range [][2]string{{"lead", ""}, {"lead", ""}, {"lead#a", "lead"}, {"lead#a#1", "lead#a"}, {"other", ""}} {
		tr.Enter("", kp[0], kp[1], func() { aborted = append(aborted, kp[0]) })
	}
	if got := tr.CancelBelow("lead"); !slices.Equal(got, []string{"lead#a", "lead#a#1"}) {
		t.Fatalf("cancelled %v", got)
	}
	slices.Sort(aborted)
	if !slices.Equal(aborted, []string{"lead#a", "lead#a#1"}) {
		t.Fatalf("aborted %v", aborted)
	}
}

// One tree serves every profile: a lead's cancel reaches a child under
// another profile, and each profile's figures count its own requests.
func TestGroupsShareTheTreeAndKeepTheirFigures(t *testing.T) {
	tr := New()
	var aborted []string
	tr.Enter("a", "lead", "", func() { aborted = append(aborted, "lead") })
	tr.Enter("b", "lead#sub", "lead", func() { aborted = append(aborted, "lead#sub") })
	if got := tr.CancelBelow("lead"); !slices.Equal(got, []string{"lead#sub"}) || !slices.Equal(aborted, got) {
		t.Fatalf("cancelled %v", got)
	}
	ga, _ := tr.Stats("a")
	gb, per := tr.Stats("b")
	if ga.Requests != 1 || ga.Cancelled != 0 || gb.Requests != 1 || gb.Cancelled != 1 || gb.Linked != 1 || per["lead#sub"] != 1 {
		t.Fatalf("a %+v, b %+v %v", ga, gb, per)
	}
}
