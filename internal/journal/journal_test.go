package journal

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/store"
)

func TestJournal(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	clock := time.Unix(10000, 0)
	j := New(db, 2, time.Minute, func() time.Time { return clock })

	if err := j.Begin(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := j.Begin(ctx, "a"); !errors.Is(err, ErrRunning) {
		t.Fatalf("the same request twice: %v", err)
	}
	if err := j.Begin(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if err := j.Begin(ctx, "c"); !errors.Is(err, ErrFull) {
		t.Fatalf("over the bound: %v", err)
	}
	if err := j.End(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if err := j.Begin(ctx, "c"); err != nil {
		t.Fatalf("after one ended: %v", err)
	}

	// After an unclean restart (another owner, now gone) the request has
	// an unknown outcome until its entry ages out.
	after := New(db, 2, time.Minute, func() time.Time { return clock })
	after.owner = "1:1"
	after.alive = func(string) bool { return false }
	if err := after.Begin(ctx, "a"); !errors.Is(err, ErrUnknownOutcome) {
		t.Fatalf("after the restart: %v", err)
	}
	if err := after.End(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := after.Begin(ctx, "a"); !errors.Is(err, ErrUnknownOutcome) {
		t.Fatal("another owner's End cleared the entry")
	}
	clock = clock.Add(time.Minute)
	if err := after.Begin(ctx, "a"); err != nil {
		t.Fatalf("after its age: %v", err)
	}
}
