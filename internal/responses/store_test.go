package responses

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/meridian-gw/meridian/internal/cluster"
	"github.com/meridian-gw/meridian/internal/store"
	"github.com/meridian-gw/meridian/internal/store/sqlite"
	"github.com/meridian-gw/meridian/internal/store/sqlstore"
)

// fixture is a store on a new SQLite file, with its handle for the
// tests' own queries and this process's host registry.
type fixture struct {
	db     *sql.DB
	st     *store.Store
	owners *cluster.Registry
}

func openDB(t *testing.T, dir string) fixture {
	t.Helper()
	path := filepath.Join(dir, "meridian.db")
	db, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	st := sqlite.NewStore(db, path, sqlstore.Options{})
	t.Cleanup(func() { _ = st.Close() })
	owners := cluster.New(cluster.Config{Hosts: st.Hosts, Host: "test-host"})
	if err := owners.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(owners.Close)
	return fixture{db: db, st: st, owners: owners}
}

func open(ctx context.Context, f fixture, cfg Config) (*Store, error) {
	return Open(ctx, f.st, f.owners, cfg)
}

// clock advances a millisecond per call, so records order by creation.
func clock() func() time.Time {
	t := time.UnixMilli(1_700_000_000_000)
	return func() time.Time { t = t.Add(time.Millisecond); return t }
}

func record(id, status string, size int) Record {
	return Record{ID: id, Scope: "local", Status: status, Input: json.RawMessage(`"` + strings.Repeat("x", size) + `"`), Response: json.RawMessage(`{}`)}
}

func ids(t *testing.T, f fixture) string {
	t.Helper()
	rows, err := f.db.Query(`SELECT id FROM responses ORDER BY created_at`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		_ = rows.Scan(&id)
		out = append(out, id)
	}
	return strings.Join(out, " ")
}

// The ledger keeps at most its count, evicting the oldest finished first.
func TestLedgerCountEvictsOldestFirst(t *testing.T) {
	f := openDB(t, t.TempDir())
	s, err := open(context.Background(), f, Config{MaxCount: 3, Now: clock()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := 1; i <= 5; i++ {
		if err := s.Put(ctx, record(fmt.Sprintf("r%d", i), "completed", 10)); err != nil {
			t.Fatal(err)
		}
	}
	if got := ids(t, f); got != "r3 r4 r5" {
		t.Fatalf("kept %s, want the newest three", got)
	}
	if n, _, _ := s.Usage(ctx); n != 3 {
		t.Fatalf("count %d", n)
	}
}

// The byte bound evicts as many of the oldest as needed; running
// responses are never evicted, and when only they are left the store
// refuses rather than evicting them.
func TestLedgerBytesNeverEvictRunningWork(t *testing.T) {
	f := openDB(t, t.TempDir())
	s, err := open(context.Background(), f, Config{MaxCount: 100, MaxBytes: 400, Now: clock()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, r := range []Record{record("run1", "in_progress", 100), record("old", "completed", 100), record("run2", "queued", 100)} {
		if err := s.Put(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Put(ctx, record("new", "completed", 100)); err != nil {
		t.Fatal(err)
	}
	if got := ids(t, f); got != "run1 run2 new" {
		t.Fatalf("kept %s: the oldest finished one should have gone", got)
	}
	if err := s.Put(ctx, record("big", "completed", 150)); err != nil {
		t.Fatal(err)
	}
	if got := ids(t, f); got != "run1 run2 big" {
		t.Fatalf("kept %s", got)
	}
	if err := s.Put(ctx, record("huge", "completed", 300)); !errors.Is(err, ErrFull) {
		t.Fatalf("put beyond the running work: %v, want ErrFull", err)
	}
	if got := ids(t, f); got != "run1 run2 big" {
		t.Fatalf("kept %s: a refused put must evict nothing", got)
	}
	_, bytes, _ := s.Usage(ctx)
	if bytes > 400 {
		t.Fatalf("ledger holds %d bytes, bound 400", bytes)
	}
}

// A response finishing near the byte bound is never evicted by its own end,
// nor is its end rolled back when only running responses are left to
// make room: the ledger stays over its bound until the next put.
func TestFinishingResponseKeepsItsEnd(t *testing.T) {
	f := openDB(t, t.TempDir())
	s, err := open(context.Background(), f, Config{MaxCount: 100, MaxBytes: 400, Now: clock()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, r := range []Record{record("old", "completed", 100), record("run", "in_progress", 100), record("mine", "in_progress", 100)} {
		if err := s.Put(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	big := json.RawMessage(`{"output":"` + strings.Repeat("y", 150) + `"}`)
	if err := s.Update(ctx, "mine", "completed", big); err != nil {
		t.Fatalf("finishing past the bound: %v", err)
	}
	// The oldest finished one made room; the finishing one stayed.
	if got := ids(t, f); got != "run mine" {
		t.Fatalf("kept %s", got)
	}
	// Now only running work and the finishing response are left: its end
	// is kept all the same.
	bigger := json.RawMessage(`{"output":"` + strings.Repeat("z", 300) + `"}`)
	if err := s.Update(ctx, "mine", "completed", bigger); err != nil {
		t.Fatalf("finishing with only running work left: %v", err)
	}
	rec, err := s.Get(ctx, "local", "mine")
	if err != nil || rec.Status != "completed" || !strings.Contains(string(rec.Response), "zzz") {
		t.Fatalf("the finished response: %v %s %.40s", err, rec.Status, rec.Response)
	}
	// The next put makes room again, from the finished ones.
	if err := s.Put(ctx, record("next", "in_progress", 10)); err != nil {
		t.Fatal(err)
	}
	if got := ids(t, f); got != "run next" {
		t.Fatalf("after the next put, kept %s", got)
	}
}

// A restart rebuilds the ledger from SQLite: lowered bounds apply at once,
// and responses whose process is gone are failed, not in progress forever.
func TestRestartRebuildsTheLedgerAndFailsOrphans(t *testing.T) {
	f := openDB(t, t.TempDir())
	s, err := open(context.Background(), f, Config{Now: clock()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := 1; i <= 4; i++ {
		if err := s.Put(ctx, record(fmt.Sprintf("r%d", i), "completed", 10)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Put(ctx, record("bg", "in_progress", 10)); err != nil {
		t.Fatal(err)
	}
	// This process owns "bg": a reopen here keeps it running.
	if s2, err := open(ctx, f, Config{Now: clock()}); err != nil {
		t.Fatal(err)
	} else if r, _ := s2.Get(ctx, "local", "bg"); r.Status != "in_progress" {
		t.Fatalf("a live process's response was failed: %s", r.Status)
	}
	// Another process on this host owned it and is gone.
	if _, err := f.db.Exec(`UPDATE responses SET incarnation = '999999999:1' WHERE id = 'bg'`); err != nil {
		t.Fatal(err)
	}
	s3, err := open(ctx, f, Config{MaxCount: 2, Now: clock()})
	if err != nil {
		t.Fatal(err)
	}
	r, err := s3.Get(ctx, "local", "bg")
	if err != nil || r.Status != "failed" || !strings.Contains(string(r.Response), "stopped before it finished") {
		t.Fatalf("orphan after restart: %v %s %s", err, r.Status, r.Response)
	}
	if got := ids(t, f); got != "r4 bg" {
		t.Fatalf("kept %s after a restart with a lower bound", got)
	}
}

// A response belongs to the credential that created it.
func TestScopes(t *testing.T) {
	f := openDB(t, t.TempDir())
	s, err := open(context.Background(), f, Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r := record("mine", "completed", 1)
	r.Scope = "key:a"
	if err := s.Put(ctx, r); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "key:b", "mine"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("another scope read it: %v", err)
	}
	if err := s.Delete(ctx, "key:b", "mine"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("another scope deleted it: %v", err)
	}
	if err := s.Update(ctx, "gone", "completed", json.RawMessage(`{}`)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("update of a missing response: %v", err)
	}
	if got, err := s.Get(ctx, "key:a", "mine"); err != nil || got.Status != "completed" {
		t.Fatalf("own scope: %v %+v", err, got)
	}
	k1, err := s.SealKey(ctx)
	if err != nil {
		t.Fatal(err)
	}
	k2, _ := s.SealKey(ctx)
	if len(k1) != 32 || string(k1) != string(k2) {
		t.Fatal("the seal key is not made once and kept")
	}
}

// The sweep fails an orphan within Sweep while some response is
// unfinished, and within IdleSweep once none was: an idle gateway looks
// at its store rarely.
func TestSweepKeepsItsPaceToWhatIsUnfinished(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := openDB(t, t.TempDir())
		ctx := context.Background()
		s, err := open(ctx, f, Config{})
		if err != nil {
			t.Fatal(err)
		}
		j := NewJobs(JobsConfig{Store: s, Sweep: 2 * time.Second, IdleSweep: 15 * time.Second})
		defer j.Close()
		orphan := func(id string) {
			t.Helper()
			if err := s.Put(ctx, record(id, "in_progress", 10)); err != nil {
				t.Fatal(err)
			}
			// Its owner, another process on this host, is gone.
			if _, err := f.db.Exec(`UPDATE responses SET incarnation = '999999999:1' WHERE id = ?`, id); err != nil {
				t.Fatal(err)
			}
		}
		status := func(id string) string {
			t.Helper()
			r, err := s.Get(ctx, "local", id)
			if err != nil {
				t.Fatal(err)
			}
			return r.Status
		}
		time.Sleep(3 * time.Second) // the first sweep found nothing
		synctest.Wait()
		orphan("idle")
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if got := status("idle"); got != "in_progress" {
			t.Fatalf("swept at the busy pace with nothing unfinished: %s", got)
		}
		time.Sleep(12 * time.Second)
		synctest.Wait()
		if got := status("idle"); got != "failed" {
			t.Fatalf("an orphan was not failed within the idle sweep: %s", got)
		}

		// A job of this process runs: the pace is Sweep's again.
		if _, err := j.Start("mine", current, func(ctx context.Context, log *EventLog) { <-ctx.Done() }); err != nil {
			t.Fatal(err)
		}
		orphan("busy")
		time.Sleep(2*time.Second + 100*time.Millisecond)
		synctest.Wait()
		if got := status("busy"); got != "failed" {
			t.Fatalf("an orphan was not failed within the sweep while a job runs: %s", got)
		}
	})
}
