package lead

import (
	"slices"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/spawn"
)

// Clear dismisses finished children unread; a receipt is an ack recorded
// as one. Both are consumption: collect and wait never deliver what they
// took, and what they did not take stays owed.
func TestClearAndReceipts(t *testing.T) {
	w := newWorld(t)
	a, b, c, d, running := w.child("a"), w.child("b"), w.child("c"), w.child("d"), w.child("running")
	for _, r := range []string{a.ID, b.ID, c.ID, d.ID} {
		row, _ := w.lead.Get(ctx, r)
		w.finish(row, spawn.Succeeded)
	}
	w.expectOwed("start", "p1", "p2", "p3", "p4")

	// Refusals leave everything owed: a running child, another lead's
	// child, an unknown id, -C; one bad id stops the whole clear.
	nested := *w.lead
	nested.ID, nested.Depth = running.ID, 1
	grandchild, err := nested.Create(ctx, Spec{Prompt: "deeper"})
	if err != nil {
		t.Fatal(err)
	}
	ro := *w.lead
	ro.ReadOnly = true
	for name, try := range map[string]func() error{
		"running":     func() error { _, err := w.lead.Clear(ctx, []string{a.ID, running.ID}); return err },
		"not a child": func() error { _, err := w.lead.Clear(ctx, []string{grandchild.ID}); return err },
		"unknown":     func() error { _, err := w.lead.Clear(ctx, []string{"p99"}); return err },
		"bad id":      func() error { _, err := w.lead.Clear(ctx, []string{"x"}); return err },
		"-C":          func() error { _, err := ro.Clear(ctx, nil); return err },
		"bad receipt": func() error { return w.lead.Ack(ctx, []string{a.ID}, "not a/receipt") },
		"-C receipt":  func() error { return ro.Ack(ctx, []string{a.ID}, "d1") },
	} {
		if try() == nil {
			t.Fatalf("%s: accepted", name)
		}
	}
	w.expectOwed("after refusals", "p1", "p2", "p3", "p4")

	// Named ids, then a receipt, then everything left.
	if got, err := w.lead.Clear(ctx, []string{a.ID}); err != nil || !slices.Equal(got, []string{a.ID}) {
		t.Fatalf("clear p1: %v %v", got, err)
	}
	w.expectOwed("after clear p1", "p2", "p3", "p4")
	if err := w.lead.Ack(ctx, []string{b.ID}, "0b6f3c1e-delivery_7"); err != nil {
		t.Fatal(err)
	}
	w.expectOwed("after the receipt", "p3", "p4")
	if dl, err := w.lead.Collect(ctx, nil); err != nil || !slices.Equal(dl.IDs, []string{c.ID, d.ID}) {
		t.Fatalf("collect after clear and receipt: %+v %v", dl, err)
	}
	if got, err := w.lead.Clear(ctx, nil); err != nil || !slices.Equal(got, []string{c.ID, d.ID}) {
		t.Fatalf("clear all: %v %v", got, err)
	}
	w.expectOwed("after clear all")
	if got, err := w.lead.Clear(ctx, nil); err != nil || len(got) != 0 {
		t.Fatalf("clear with nothing owed: %v %v", got, err)
	}
	if res, err := w.lead.Wait(ctx, WaitOptions{Observe: true, Timeout: 100 * time.Millisecond}); err != nil || len(res.Owed) != 0 {
		t.Fatalf("wait after clear: %+v %v", res, err)
	}

	// The first way each was consumed is the one kept.
	if err := w.lead.Ack(ctx, []string{a.ID}, ""); err != nil {
		t.Fatal(err)
	}
	how, err := w.worker.ConsumedHow(ctx, "/proj", "")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{a.ID: "clear", b.ID: "receipt", c.ID: "clear", d.ID: "clear"}
	for id, h := range want {
		if how[id] != h {
			t.Fatalf("%s consumed by %q, want %q (%v)", id, how[id], h, how)
		}
	}
}
