package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/procident"
	"github.com/meridian-gw/meridian/internal/spawn"
	"github.com/meridian-gw/meridian/internal/spawn/lead"
	"github.com/meridian-gw/meridian/internal/spawn/registry"
	"github.com/meridian-gw/meridian/internal/spawn/runner"
	"github.com/meridian-gw/meridian/internal/store/sqlite"
	"github.com/meridian-gw/meridian/internal/testkit"
)

// seeder writes spawns straight into the world's registry, the way a
// worker would, for states that are slow or racy to reach by running
// children: forty finished ones, a dead worker that left a report.
type seeder struct {
	t    testing.TB
	reg  *registry.Registry
	lead *lead.Lead
}

func (w *spawnWorld) seeder() *seeder {
	w.t.Helper()
	return newSeeder(w.t, w.dataDir, w.project)
}

func newSeeder(t testing.TB, dataDir, project string) *seeder {
	db, err := sqlite.Open(context.Background(), dataDir+"/meridian.db")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	proj, err := lead.FindProject(project)
	if err != nil {
		t.Fatal(err)
	}
	reg := registry.New(db)
	return &seeder{t: t, reg: reg, lead: &lead.Lead{Registry: reg, Project: proj, Cwd: project, SpawnsDir: dataDir + "/spawns"}}
}

// running records a child of the root lead running under the process pid.
func (s *seeder) running(pid int, start uint64) registry.Row {
	s.t.Helper()
	ctx := context.Background()
	row, err := s.lead.Create(ctx, lead.Spec{Prompt: "seeded"})
	if err != nil {
		s.t.Fatal(err)
	}
	if err := os.MkdirAll(row.Dir, 0o700); err != nil {
		s.t.Fatal(err)
	}
	if err := s.reg.Start(ctx, row.Project, row.ID, pid, start); err != nil {
		s.t.Fatal(err)
	}
	return row
}

// finish writes a report and finalizes as the runner would.
func (s *seeder) finish(row registry.Row, status spawn.Status) {
	s.t.Helper()
	if status == spawn.Succeeded {
		if err := os.WriteFile(runner.Artifacts(row.Dir).Report(), []byte("REPORT-BODY of "+row.ID), 0o600); err != nil {
			s.t.Fatal(err)
		}
	}
	if _, err := s.reg.Finalize(context.Background(), row.Project, row.ID, registry.Final{Status: status, Origin: spawn.Runner}); err != nil {
		s.t.Fatal(err)
	}
}

func (s *seeder) consumed() []string {
	s.t.Helper()
	m, err := s.reg.Consumed(context.Background(), s.lead.Project, "")
	if err != nil {
		s.t.Fatal(err)
	}
	var ids []string
	for id := range m {
		ids = append(ids, id)
	}
	return sortedIDs(ids)
}

func sortedIDs(ids []string) []string {
	slices.SortFunc(ids, func(a, b string) int {
		x, _ := spawn.ParseID(a)
		y, _ := spawn.ParseID(b)
		return x - y
	})
	return ids
}

func idRange(from, to int) []string {
	var ids []string
	for n := from; n <= to; n++ {
		ids = append(ids, fmt.Sprintf("p%d", n))
	}
	return ids
}

// Forty finished children and one running: wait returns the oldest 32
// header-only and leaves 8 owed; while it holds its lease collect skips
// what it waits for; on return it consumes what it returned.
func TestSpawnWaitReturnsOldest32AndLeases(t *testing.T) {
	t.Parallel()
	w := newSpawnWorld(t, buildBinary(t), "/no/claude/needed")
	s := w.seeder()
	me, myStart := procident.Self()
	for range 40 {
		s.finish(s.running(me, myStart), spawn.Succeeded)
	}
	p41 := s.running(me, myStart)

	// Text, without observing: the oldest 32 headers, no bodies, and the
	// running child still running when the timeout ends the wait.
	r := w.run("spawn", "wait", "--no-observe", "--timeout", "1s")
	if r.code != 124 {
		t.Fatalf("wait --timeout: exit %d\n%s%s", r.code, r.out, r.err)
	}
	for _, id := range idRange(1, 32) {
		if !strings.Contains(r.out, "report: meridian spawn show "+id+"\n") {
			t.Fatalf("wait did not print %s:\n%s", id, r.out)
		}
	}
	if strings.Contains(r.out, "show p33\n") || strings.Contains(r.out, "REPORT-BODY") || !strings.Contains(r.out, "32 background spawns finished") ||
		!strings.Contains(r.out, "p41 still running") {
		t.Fatalf("wait output:\n%s", r.out)
	}
	if got := s.consumed(); len(got) != 0 {
		t.Fatalf("wait --no-observe consumed %v", got)
	}

	// JSON, observing: the lease hides p1–p32 and p41 from collect.
	waiting := w.background("spawn", "wait", "--json")
	if err := testkit.WaitFor(30*time.Second, func() error {
		leased, err := s.reg.Leased(context.Background(), s.lead.Project, "", procident.Alive)
		if err == nil && len(leased) != 33 {
			err = fmt.Errorf("leases: %v", leased)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if d := w.collect(); !slices.Equal(d.IDs, idRange(33, 40)) {
		t.Fatalf("collect during the wait delivered %v", d.IDs)
	}
	s.finish(p41, spawn.Succeeded)
	r = <-waiting
	if r.code != 0 {
		t.Fatalf("wait: exit %d\n%s%s", r.code, r.out, r.err)
	}
	var res waitJSON
	if err := json.Unmarshal([]byte(r.out), &res); err != nil {
		t.Fatal(err)
	}
	var owed []string
	for _, v := range res.OwedSpawns {
		owed = append(owed, v.ID)
		if v.Report != nil {
			t.Fatalf("owed_spawns carries a report for %s", v.ID)
		}
	}
	if !slices.Equal(owed, idRange(1, 32)) || len(res.Spawns) != 1 || res.Spawns[0].ID != "p41" ||
		res.Spawns[0].Report == nil || *res.Spawns[0].Report != "REPORT-BODY of p41" || len(res.Pending) != 0 {
		t.Fatalf("wait --json: %s", r.out)
	}

	// It consumed what it returned; the other 8 stay owed, and its leases
	// are gone.
	if got := s.consumed(); !slices.Equal(got, append(idRange(1, 32), "p41")) {
		t.Fatalf("consumed after wait: %v", got)
	}
	if d := w.collect(); !slices.Equal(d.IDs, idRange(33, 40)) {
		t.Fatalf("collect after the wait delivered %v", d.IDs)
	}
	if leased, _ := s.reg.Leased(context.Background(), s.lead.Project, "", procident.Alive); len(leased) != 0 {
		t.Fatalf("leases left: %v", leased)
	}
	// A failed waited run makes the exit status 1.
	failing := s.running(me, myStart)
	s.finish(failing, spawn.Failed)
	if r := w.run("spawn", "wait", failing.ID); r.code != 1 {
		t.Fatalf("wait on a failed run: exit %d", r.code)
	}
}

// Twenty creates at once: twenty distinct ids and twenty rows. Their
// workers find no claude and fail, which is all this needs.
func TestSpawnConcurrentCreates(t *testing.T) {
	t.Parallel()
	w := newSpawnWorld(t, buildBinary(t), "/no/such/claude")
	var wg sync.WaitGroup
	ids := make([]string, 20)
	for i := range ids {
		wg.Go(func() {
			r := w.run("spawn", "-p", fmt.Sprintf("create %d", i))
			if r.code != 0 {
				t.Errorf("create %d: exit %d %s", i, r.code, r.err)
			}
			ids[i] = strings.TrimSpace(r.out)
		})
	}
	wg.Wait()
	if !slices.Equal(sortedIDs(slices.Clone(ids)), idRange(1, 20)) {
		t.Fatalf("ids: %v", ids)
	}
	all := w.until("every worker to finish", terminal(idRange(1, 20)...))
	for id, s := range all {
		if s.Status != "failed" || s.Origin != "launch_failure" || !strings.Contains(s.Error, "/no/such/claude") {
			t.Fatalf("%s: %+v", id, s)
		}
	}
	if len(all) != 20 {
		t.Fatalf("%d rows", len(all))
	}
}

// kill -9 of a worker: nested callers never reap; the root lead's next
// read finalizes it orphan_run once the (shortened) window passes. A dead
// worker that left a complete report is reaped as succeeded.
func TestSpawnReaper(t *testing.T) {
	t.Parallel()
	w := newSpawnWorld(t, buildBinary(t), testkit.ClaudePath(t),
		"MERIDIAN_SPAWN_REAP_WINDOW=1s", "MERIDIAN_SPAWN_REAP_GRACE=1s")
	gate := make(chan struct{})
	w.up.Respond(func(r testkit.Request) testkit.Reply {
		return testkit.Reply{Gate: gate, Text: "finished late"}
	})
	id := strings.TrimSpace(w.must("spawn", "-p", "task-zeta: long work"))
	w.waitRequests("task-zeta")
	worker := w.spawns()[id]
	if worker.Status != "running" || worker.RunnerPID == 0 {
		t.Fatalf("before the kill: %+v", worker)
	}
	testkit.Kill(worker.RunnerPID)

	// A dead worker whose report was written in full.
	s := w.seeder()
	sleeper := exec.Command("sleep", "30")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	start, err := procident.StartTime(sleeper.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	done := s.running(sleeper.Process.Pid, start)
	if err := os.WriteFile(runner.Artifacts(done.Dir).Report(), []byte("complete"), 0o600); err != nil {
		t.Fatal(err)
	}
	_ = sleeper.Process.Kill()
	_ = sleeper.Wait()

	// Nested callers (depth > 0) never reap, however long it has been.
	time.Sleep(2500 * time.Millisecond)
	nested := w.runEnv([]string{"MERIDIAN_DEPTH=1", "MERIDIAN_SPAWN_ID=p99"}, "spawn", "list", "--all", "--json")
	if nested.code != 0 || strings.Contains(nested.out, `"reconciler"`) {
		t.Fatalf("a nested caller reaped: %s %s", nested.out, nested.err)
	}
	all := w.until("the reaper", terminal(id, done.ID))
	if got := all[id]; got.Status != "failed" || got.Error != "orphan_run" || got.Origin != "reconciler" {
		t.Fatalf("killed worker: %+v", got)
	}
	if got := all[done.ID]; got.Status != "succeeded" || got.Origin != "reconciler" {
		t.Fatalf("dead worker with a report: %+v", got)
	}
	// The orphaned claude finishes its call and exits on its closed stdin.
	close(gate)
}

// collect gives up, consuming nothing, once the process that started it
// (the lead) is gone.
func TestSpawnCollectEndsWithItsParent(t *testing.T) {
	t.Parallel()
	w := newSpawnWorld(t, buildBinary(t), "/no/claude/needed")
	me, start := procident.Self()
	w.seeder().running(me, start)
	out := filepath.Join(t.TempDir(), "out")
	// The shell is collect's parent; it exits while collect still blocks.
	sh := exec.Command("sh", "-c", `"$0" spawn collect > "$1" & sleep 0.5`, w.bin, out)
	sh.Dir, sh.Env = w.project, w.env
	if err := sh.Run(); err != nil {
		t.Fatal(err)
	}
	var b []byte
	if err := testkit.WaitFor(20*time.Second, func() error {
		if b, _ = os.ReadFile(out); len(b) == 0 {
			return errors.New("collect outlived its parent")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if d := decodeDelivery(t, result{out: string(b)}); d.Kind != "empty" {
		t.Fatalf("orphaned collect printed %+v", d)
	}
}
