package claude_test

import (
	"context"
	"strings"
	"testing"

	"github.com/meridian-gw/meridian/internal/backend"
	"github.com/meridian-gw/meridian/internal/testkit"
)

// A recycled process answers its next turn as a new conversation with
// the system prompt it had, under its session id; one resumed from a
// transcript refuses to be recycled, since its first message is not its
// own.
func TestRecycleEmptiesTheConversation(t *testing.T) {
	t.Parallel()
	up := testkit.NewUpstream(t)
	up.Always(testkit.Reply{Text: "ok"})
	d, _ := newDriver(t, up)
	dir := t.TempDir()
	s, err := d.Start(context.Background(), backend.StartOptions{Model: "test-model", System: []string{"KEPT-SYSTEM"}, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	turn := func(s backend.Session, text string) *backend.Result {
		t.Helper()
		var c collector
		res, err := s.Turn(context.Background(), userText(text), c.emit)
		if err != nil || res.Failure != nil {
			t.Fatalf("turn %q: %v %+v", text, err, res)
		}
		return res
	}
	first := turn(s, "first question")
	turn(s, "second question")
	r := s.(backend.Recycler)
	if err := r.Recycle(context.Background()); err != nil {
		t.Fatal(err)
	}
	after := turn(s, "new conversation")
	if after.SessionID != first.SessionID {
		t.Fatalf("session %s after the recycle, want %s kept", after.SessionID, first.SessionID)
	}
	last := up.Requests()[len(up.Requests())-1]
	if text := last.AllText(); strings.Contains(text, "question") || !strings.Contains(text, "new conversation") {
		t.Fatalf("the model saw after the recycle:\n%s", text)
	}
	if !strings.Contains(last.SystemText(), "KEPT-SYSTEM") {
		t.Fatalf("system prompt after the recycle: %q", last.SystemText())
	}
	// Recycled twice, and resumed at the last answer: the resumed session
	// holds the last conversation alone.
	if err := r.Recycle(context.Background()); err != nil {
		t.Fatal(err)
	}
	last3 := turn(s, "third conversation")
	resumed, err := d.Start(context.Background(), backend.StartOptions{Model: "test-model", System: []string{"KEPT-SYSTEM"}, Dir: dir,
		Resume: last3.SessionID, ResumeAt: last3.Pin})
	if err != nil {
		t.Fatal(err)
	}
	defer resumed.Close()
	turn(resumed, "third follow-up")
	if text := up.Requests()[len(up.Requests())-1].AllText(); strings.Contains(text, "new conversation") || !strings.Contains(text, "third conversation") {
		t.Fatalf("the resumed session held:\n%s", text)
	}
	if err := resumed.(backend.Recycler).Recycle(context.Background()); err == nil {
		t.Fatal("a resumed session was recycled")
	}
}
