package journal

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/store"
	"github.com/meridian-gw/meridian/internal/store/sqlite"
	"github.com/meridian-gw/meridian/internal/store/sqlstore"
)

// owners is a process and the owners it knows to be alive.
type owners struct {
	self  store.Owner
	alive map[store.Owner]bool
}

func (o owners) Self() store.Owner { return o.self }

func (o owners) Alive(_ context.Context, x store.Owner) (bool, error) {
	return x == o.self || o.alive[x], nil
}

func TestJournal(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "m.db")
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	st := sqlite.NewStore(db, path, sqlstore.Options{})
	defer st.Close()
	clock := time.Unix(10000, 0)
	first := owners{self: store.Owner{Host: "a", Incarnation: "1"}}
	j := New(st.Journal, first, 2, time.Minute, func() time.Time { return clock })

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

	// Another host that knows the first alive is told it runs.
	other := owners{self: store.Owner{Host: "b", Incarnation: "1"}, alive: map[store.Owner]bool{first.self: true}}
	if err := New(st.Journal, other, 2, time.Minute, func() time.Time { return clock }).Begin(ctx, "a"); !errors.Is(err, ErrRunning) {
		t.Fatalf("on another host while it runs: %v", err)
	}
	// Once its owner is gone the request has an unknown outcome until its
	// entry ages out.
	after := New(st.Journal, owners{self: other.self}, 2, time.Minute, func() time.Time { return clock })
	if err := after.Begin(ctx, "a"); !errors.Is(err, ErrUnknownOutcome) {
		t.Fatalf("after its owner died: %v", err)
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
