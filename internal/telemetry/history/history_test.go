package history

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/meridian-gw/meridian/internal/store"
	"github.com/meridian-gw/meridian/internal/store/sqlite"
	"github.com/meridian-gw/meridian/internal/store/sqlstore"
	"github.com/meridian-gw/meridian/internal/telemetry"
	"github.com/meridian-gw/meridian/internal/testkit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestImportsFlowDownward(t *testing.T) {
	testkit.CheckImports(t, "internal/store", "internal/telemetry")
}

func openDB(t *testing.T, path string) *store.Store {
	t.Helper()
	db, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	return sqlite.NewStore(db, path, sqlstore.Options{})
}

func record(i int, at time.Time) telemetry.Record {
	return telemetry.Record{Time: at, API: telemetry.APIMessages, Client: "generic", Conversation: fmt.Sprintf("c%d", i),
		Model: "sonnet", Effective: "claude-sonnet-5-5", Verdict: "continuation", Status: 200, Total: time.Duration(i) * time.Millisecond,
		Tokens: telemetry.Tokens{Input: int64(i), Output: 1}, Cost: 0.5}
}

// At its row bound the history drops the oldest rows first, and a restart
// (a new process on the same file) finds what was kept.
func TestRowBoundPrunesOldestFirstAndRestartKeepsHistory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meridian.db")
	db := openDB(t, path)
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	clock := now
	h := Open(db.Telemetry, "host-a", Limits{MaxRows: 10}, nil, func() time.Time { return clock })
	for i := range 25 {
		h.Add(record(i, now.Add(time.Duration(i)*time.Second)))
	}
	if err := h.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	clock = clock.Add(2 * pruneEvery) // the next write prunes
	h.Add(record(25, now.Add(25*time.Second)))
	if err := h.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.Close()
	_ = db.Close()

	db = openDB(t, path)
	defer db.Close()
	h = Open(db.Telemetry, "host-a", Limits{MaxRows: 10}, nil, func() time.Time { return clock })
	defer h.Close()
	got, err := h.Page(context.Background(), Filter{}, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 10 || got[0].Conversation != "c25" || got[9].Conversation != "c16" {
		t.Fatalf("kept %d rows, newest %q oldest %q; want c25 … c16", len(got), got[0].Conversation, got[len(got)-1].Conversation)
	}
	if got[0].Host != "host-a" || got[0].Tokens.Input != 25 || got[0].Total != 25*time.Millisecond || !got[0].Time.Equal(now.Add(25*time.Second)) {
		t.Fatalf("the record changed in the store: %+v", got[0])
	}
	tot, since, err := h.Cumulative(context.Background())
	if err != nil || tot.Requests != 10 || tot.Cost != 5 || !since.Equal(now.Add(16*time.Second)) {
		t.Fatalf("cumulative %+v since %v: %v", tot, since, err)
	}
}

func TestAgeBoundPrunesOnOpen(t *testing.T) {
	db := openDB(t, filepath.Join(t.TempDir(), "meridian.db"))
	defer db.Close()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	h := Open(db.Telemetry, "host-a", Limits{MaxAge: time.Hour}, nil, func() time.Time { return now })
	h.Add(record(1, now.Add(-2*time.Hour)))
	h.Add(record(2, now.Add(-time.Minute)))
	h.Close()
	h = Open(db.Telemetry, "host-a", Limits{MaxAge: time.Hour}, nil, func() time.Time { return now })
	defer h.Close()
	if err := h.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	got, _ := h.Between(context.Background(), now.Add(-24*time.Hour), now)
	if len(got) != 1 || got[0].Conversation != "c2" {
		t.Fatalf("after the age bound: %+v", got)
	}
}

func TestFilters(t *testing.T) {
	db := openDB(t, filepath.Join(t.TempDir(), "meridian.db"))
	defer db.Close()
	h := Open(db.Telemetry, "host-a", Limits{}, nil, nil)
	defer h.Close()
	now := time.Now()
	hit := record(1, now)
	hit.Tokens.CacheRead = 100
	miss := record(2, now)
	failed := record(3, now)
	failed.Status, failed.ErrorType, failed.Client = 429, "rate_limit_error", "opencode"
	for _, r := range []telemetry.Record{hit, miss, failed} {
		h.Add(r)
	}
	if err := h.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		f    Filter
		want string
	}{
		{Filter{MissedCache: true}, "c2"},
		{Filter{Status: "error"}, "c3"},
		{Filter{Status: "429"}, "c3"},
		{Filter{Client: "opencode"}, "c3"},
	} {
		got, err := h.Page(context.Background(), tc.f, 0, 10)
		if err != nil || len(got) != 1 || got[0].Conversation != tc.want {
			t.Errorf("%+v: %+v %v", tc.f, got, err)
		}
	}
	all, _ := h.Page(context.Background(), Filter{Model: "claude-sonnet-5-5"}, 0, 2)
	older, _ := h.Page(context.Background(), Filter{}, all[1].ID, 10)
	if len(all) != 2 || len(older) != 1 || older[0].Conversation != "c1" {
		t.Fatalf("paging: %+v then %+v", all, older)
	}
}

// down is a store that cannot take records: its writes wait out their
// deadline, then fail.
type down struct{ store.Telemetry }

func (down) Insert(ctx context.Context, _ []store.Request) error {
	<-ctx.Done()
	return errors.New("the database is unreachable")
}

func (down) Prune(context.Context, time.Time, int) error {
	return errors.New("the database is unreachable")
}

// A store that is down costs records, counted as dropped, never a
// request's time: Add returns at once however far behind the writer is.
func TestStoreOutageDropsRecordsWithoutStalling(t *testing.T) {
	h := Open(down{}, "host-a", Limits{}, nil, nil)
	start := time.Now()
	for i := range queueSize + 500 {
		h.Add(record(i, start))
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("adding records took %v with the store down", took)
	}
	// The writer holds one batch while it waits; the rest past the queue
	// is dropped.
	if h.Dropped() < 500-batchSize {
		t.Fatalf("dropped %d, want at least %d", h.Dropped(), 500-batchSize)
	}
	// Closing gives the last batch a short wait, not the writer's whole
	// patience.
	start = time.Now()
	h.Close()
	if took := time.Since(start); took > writeTimeout+closeTimeout+time.Second {
		t.Fatalf("closing took %v with the store down", took)
	}
}
