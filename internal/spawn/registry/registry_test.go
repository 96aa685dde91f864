package registry

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/spawn"
	"github.com/meridian-gw/meridian/internal/store/sqlite"
)

func open(t *testing.T, path string) *Registry {
	t.Helper()
	db, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return New(db)
}

func dirOf(id string) string { return "/spawns/" + id }

// Twenty creators, each with its own connection (as twenty processes
// would be): twenty distinct ids, no lost rows.
func TestConcurrentCreates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.db")
	open(t, path) // migrate once up front
	var wg sync.WaitGroup
	ids := make(chan string, 20)
	for range 20 {
		wg.Go(func() {
			r := open(t, path)
			row, err := r.Create(context.Background(), Row{Project: "/proj", Prompt: "p", Spawn: spawn.Spawn{Cwd: "/proj"}}, dirOf)
			if err != nil {
				t.Error(err)
				return
			}
			ids <- row.ID
		})
	}
	wg.Wait()
	close(ids)
	seen := map[string]bool{}
	for id := range ids {
		if seen[id] {
			t.Fatalf("id %s allocated twice", id)
		}
		seen[id] = true
	}
	rows, err := open(t, path).List(context.Background(), "/proj")
	if err != nil || len(rows) != 20 || len(seen) != 20 {
		t.Fatalf("%d rows, %d ids, %v", len(rows), len(seen), err)
	}
	for i, row := range rows {
		if row.ID != fmt.Sprintf("p%d", i+1) || row.Dir != dirOf(row.ID) {
			t.Fatalf("row %d: %+v", i, row)
		}
	}
	// Another project counts on its own.
	if row, _ := open(t, path).Create(context.Background(), Row{Project: "/other"}, dirOf); row.ID != "p1" {
		t.Fatalf("other project got %s", row.ID)
	}
}

func TestStatusRulesAndAuthority(t *testing.T) {
	ctx := context.Background()
	r := open(t, filepath.Join(t.TempDir(), "m.db"))
	row, _ := r.Create(ctx, Row{Project: "/p"}, dirOf)
	if err := r.Finalizing(ctx, "/p", row.ID); err == nil {
		t.Fatal("queued → finalizing accepted")
	}
	if err := r.Start(ctx, "/p", row.ID, 42, 7); err != nil {
		t.Fatal(err)
	}
	// The reaper's guess first, then the runner's fact replaces it.
	if ok, err := r.Finalize(ctx, "/p", row.ID, Final{Status: spawn.Failed, Origin: spawn.Reconciler, Error: "orphan_run"}); !ok || err != nil {
		t.Fatalf("reconciler: %v %v", ok, err)
	}
	if ok, _ := r.Finalize(ctx, "/p", row.ID, Final{Status: spawn.Succeeded, Origin: spawn.Runner, CostUSD: 0.5, InTok: 10}); !ok {
		t.Fatal("the runner lost to the reaper")
	}
	// A later cancel loses to the runner, but its metrics are kept.
	if ok, _ := r.Finalize(ctx, "/p", row.ID, Final{Status: spawn.Cancelled, Origin: spawn.Cancel, OutTok: 99, Duration: time.Second}); ok {
		t.Fatal("a second authoritative writer won")
	}
	got, _ := r.Get(ctx, "/p", row.ID)
	if got.Status != spawn.Succeeded || got.Origin != spawn.Runner || got.Error != "" || got.CostUSD != 0.5 || got.InTok != 10 ||
		got.OutTok != 99 || got.Duration != time.Second || got.RunnerPID != 42 || got.RunnerStart != 7 {
		t.Fatalf("row %+v", got)
	}
	if _, err := r.Get(ctx, "/p", "p99"); err == nil {
		t.Fatal("unknown id found")
	}
}

func TestConsumptionAndLeases(t *testing.T) {
	ctx := context.Background()
	r := open(t, filepath.Join(t.TempDir(), "m.db"))
	for range 3 {
		r.Create(ctx, Row{Project: "/p"}, dirOf)
	}
	_ = r.Consume(ctx, "/p", "", "ack", "p1", "p2")
	_ = r.Consume(ctx, "/p", "", "show", "p2") // idempotent union
	c, _ := r.Consumed(ctx, "/p", "")
	if len(c) != 2 || !c["p1"] || !c["p2"] {
		t.Fatalf("consumed %v", c)
	}
	if other, _ := r.Consumed(ctx, "/p", "p9"); len(other) != 0 {
		t.Fatal("consumption leaked to another lead")
	}
	_ = r.Lease(ctx, "/p", "", 100, 1, time.Now().Add(time.Minute), "p3")
	_ = r.Lease(ctx, "/p", "", 200, 1, time.Now().Add(-time.Second), "p1") // expired
	alive := func(pid int, _ uint64) bool { return pid == 100 }
	l, _ := r.Leased(ctx, "/p", "", alive)
	if len(l) != 1 || !l["p3"] {
		t.Fatalf("leased %v", l)
	}
	if l, _ := r.Leased(ctx, "/p", "", func(int, uint64) bool { return false }); len(l) != 0 {
		t.Fatal("a dead owner's lease counts")
	}
	_ = r.Unlease(ctx, "/p", 100)
	if l, _ := r.Leased(ctx, "/p", "", alive); len(l) != 0 {
		t.Fatal("unlease kept the lease")
	}
}

// A watch wakes on another connection's commit (as another process's
// would be) and otherwise waits out its limit.
func TestWatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.db")
	lead, worker := open(t, path), open(t, path)
	ctx := context.Background()
	w, err := lead.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if changed, err := w.Wait(ctx, 5*time.Millisecond, 50*time.Millisecond, nil); changed || err != nil {
		t.Fatalf("no commit: changed %v, %v", changed, err)
	}
	go func() {
		time.Sleep(20 * time.Millisecond)
		if _, err := worker.Create(ctx, Row{Project: "/p", Prompt: "x"}, dirOf); err != nil {
			t.Error(err)
		}
	}()
	if changed, err := w.Wait(ctx, 5*time.Millisecond, 10*time.Second, nil); !changed || err != nil {
		t.Fatalf("after a commit: changed %v, %v", changed, err)
	}
	stopped := false
	if changed, _ := w.Wait(ctx, 5*time.Millisecond, 10*time.Second, func() bool { stopped = true; return true }); changed || !stopped {
		t.Fatal("stop was not honoured")
	}
}

// A database fault is reported as what it is: only a missing row is "no
// such spawn".
func TestReadErrorsAreNotUnknownIDs(t *testing.T) {
	r := open(t, filepath.Join(t.TempDir(), "m.db"))
	ctx := context.Background()
	row, err := r.Create(ctx, Row{Project: "/p", Prompt: "p", Spawn: spawn.Spawn{Cwd: "/p"}}, dirOf)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(ctx, "/p", "p9", 1, 1); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown id: %v", err)
	}
	// A read that fails for another reason than a missing row.
	if _, err := r.db.Exec(`ALTER TABLE spawns RENAME TO spawns_gone`); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"start": r.Start(ctx, "/p", row.ID, 1, 1),
		"finalize": func() error {
			_, err := r.Finalize(ctx, "/p", row.ID, Final{Status: spawn.Failed, Origin: spawn.Runner})
			return err
		}(),
	} {
		if err == nil || errors.Is(err, ErrNotFound) {
			t.Errorf("%s on a broken table: %v, want the fault, not an unknown id", name, err)
		}
	}
}
