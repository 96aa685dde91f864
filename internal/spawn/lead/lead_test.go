package lead

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/procident"
	"github.com/meridian-gw/meridian/internal/spawn"
	"github.com/meridian-gw/meridian/internal/spawn/registry"
	"github.com/meridian-gw/meridian/internal/spawn/runner"
	"github.com/meridian-gw/meridian/internal/store/sqlite"
)

// world is a project with its registry open twice: the lead's, and a
// second one standing in for the workers, which are other processes.
type world struct {
	t      *testing.T
	lead   *Lead
	worker *registry.Registry
}

func openRegistry(t *testing.T, path string) *registry.Registry {
	t.Helper()
	db, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return registry.New(db)
}

func newWorld(t *testing.T) *world {
	dir := t.TempDir()
	path := filepath.Join(dir, "meridian.db")
	l := &Lead{Registry: openRegistry(t, path), Project: "/proj", Cwd: "/proj", SpawnsDir: filepath.Join(dir, "spawns")}
	return &world{t: t, lead: l, worker: openRegistry(t, path)}
}

var ctx = context.Background()

// child creates a child of the lead running under this test's process, so
// the reaper leaves it alone.
func (w *world) child(desc string) registry.Row {
	w.t.Helper()
	row, err := w.lead.Create(ctx, Spec{Prompt: "do " + desc, Desc: desc})
	if err != nil {
		w.t.Fatal(err)
	}
	if err := os.MkdirAll(row.Dir, 0o700); err != nil {
		w.t.Fatal(err)
	}
	pid, start := procident.Self()
	if err := w.worker.Start(ctx, row.Project, row.ID, pid, start); err != nil {
		w.t.Fatal(err)
	}
	return row
}

// finish ends a child as its worker would, with a report if it succeeded.
func (w *world) finish(row registry.Row, status spawn.Status) {
	w.t.Helper()
	if status == spawn.Succeeded {
		if err := os.MkdirAll(row.Dir, 0o700); err != nil {
			w.t.Fatal(err)
		}
		if err := os.WriteFile(runner.Artifacts(row.Dir).Report(), []byte("body of "+row.ID), 0o600); err != nil {
			w.t.Fatal(err)
		}
	}
	if _, err := w.worker.Finalize(ctx, row.Project, row.ID, registry.Final{Status: status, Origin: spawn.Runner, ExitCode: exitFor(status)}); err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) owedIDs() []string {
	w.t.Helper()
	owed, _, _, err := w.lead.owed(ctx)
	if err != nil {
		w.t.Fatal(err)
	}
	var ids []string
	for _, s := range owed {
		ids = append(ids, s.ID)
	}
	return ids
}

func (w *world) expectOwed(step string, want ...string) {
	w.t.Helper()
	if got := w.owedIDs(); !slices.Equal(got, want) {
		w.t.Fatalf("%s: owed %v, want %v", step, got, want)
	}
}

func TestConsumption(t *testing.T) {
	w := newWorld(t)
	a, b, c, running := w.child("a"), w.child("b"), w.child("c"), w.child("running")
	w.finish(a, spawn.Succeeded)
	w.finish(b, spawn.Failed)
	w.finish(c, spawn.Succeeded)
	w.expectOwed("start", "p1", "p2", "p3")

	// Reads that never consume.
	if _, err := w.lead.List(ctx, "", true); err != nil {
		t.Fatal(err)
	}
	if _, _, err := w.lead.Status(ctx, nil, false, true); err != nil {
		t.Fatal(err)
	}
	if m, err := w.lead.Search(ctx, "BODY OF"); err != nil || len(m) != 2 {
		t.Fatalf("search: %v %v", m, err)
	}
	if _, _, err := w.lead.Show(ctx, a.ID, false); err != nil {
		t.Fatal(err)
	}
	if _, _, err := w.lead.Show(ctx, running.ID, true); err != nil {
		t.Fatal(err)
	}
	ro := *w.lead
	ro.ReadOnly = true
	if _, _, err := ro.Show(ctx, a.ID, true); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ro.Status(ctx, nil, true, true); err != nil {
		t.Fatal(err)
	}
	if err := ro.Ack(ctx, []string{a.ID}, ""); err == nil {
		t.Fatal("ack with -C was accepted")
	}
	w.expectOwed("after reads", "p1", "p2", "p3")

	// Reads that show a terminal report consume it.
	if _, report, err := w.lead.Show(ctx, a.ID, true); err != nil || report != "body of p1" {
		t.Fatalf("show: %q %v", report, err)
	}
	w.expectOwed("after show", "p2", "p3")
	if _, _, err := w.lead.Status(ctx, []string{b.ID}, true, true); err != nil {
		t.Fatal(err)
	}
	w.expectOwed("after status --full", "p3")
	if err := w.lead.Ack(ctx, []string{c.ID, c.ID}, ""); err != nil {
		t.Fatal(err)
	}
	w.expectOwed("after ack")
	for _, bad := range [][]string{{"p9"}, {"x"}, {}} {
		if err := w.lead.Ack(ctx, bad, ""); err == nil {
			t.Fatalf("ack %v accepted", bad)
		}
	}

	// Another lead's children are not the root lead's to consume.
	nested := *w.lead
	nested.ID, nested.Depth = running.ID, 1
	grandchild, err := nested.Create(ctx, Spec{Prompt: "deeper"})
	if err != nil {
		t.Fatal(err)
	}
	w.finish(grandchild, spawn.Succeeded)
	if _, _, err := w.lead.Show(ctx, grandchild.ID, true); err != nil {
		t.Fatal(err)
	}
	if got, _ := w.worker.Consumed(ctx, "/proj", ""); got[grandchild.ID] {
		t.Fatal("the root lead consumed another lead's child")
	}
	if owed, _, _, _ := nested.owed(ctx); len(owed) != 1 || owed[0].ID != grandchild.ID {
		t.Fatalf("the grandchild's own lead is owed %v", owed)
	}
}

func TestDepthLimit(t *testing.T) {
	w := newWorld(t)
	deep := *w.lead
	deep.ID, deep.Depth = "p1", DefaultMaxDepth
	if _, err := deep.Create(ctx, Spec{Prompt: "x"}); !errors.Is(err, ErrTooDeep) {
		t.Fatalf("create at depth %d: %v", deep.Depth, err)
	}
	deep.Depth = DefaultMaxDepth - 1
	row, err := deep.Create(ctx, Spec{Prompt: "x"})
	if err != nil || row.Depth != DefaultMaxDepth || row.ParentID != "p1" {
		t.Fatalf("create at the limit: %+v %v", row, err)
	}
}

func TestCollect(t *testing.T) {
	w := newWorld(t)
	if d, err := w.lead.Collect(ctx, nil); err != nil || d.Kind != "empty" || d.IDs == nil {
		t.Fatalf("nothing at all: %+v %v", d, err)
	}
	a, b := w.child("a"), w.child("b")

	// Blocks while both run; wakes on a finalize committed elsewhere.
	got := make(chan Delivery, 1)
	go func() {
		d, err := w.lead.Collect(ctx, nil)
		if err != nil {
			t.Error(err)
		}
		got <- d
	}()
	select {
	case d := <-got:
		t.Fatalf("collect returned while children ran: %+v", d)
	case <-time.After(300 * time.Millisecond):
	}
	w.finish(a, spawn.Succeeded)
	d := <-got
	if d.Kind != "delivery" || !slices.Equal(d.IDs, []string{a.ID}) || strings.Contains(d.Text, "body of") ||
		!strings.Contains(d.Text, "report: meridian spawn show p1\n") || !strings.Contains(d.Text, "· a\n") {
		t.Fatalf("delivery: %+v", d)
	}
	// Collect never consumes: p1 is still owed; excluding it, collect
	// blocks on b again, and ends empty when its context does.
	w.expectOwed("after collect", a.ID)
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if d, err := w.lead.Collect(short, []string{a.ID}); err != nil || d.Kind != "empty" {
		t.Fatalf("collect --exclude p1 with p2 running, cancelled: %+v %v", d, err)
	}
	w.finish(b, spawn.Failed)
	if d, _ := w.lead.Collect(ctx, nil); !slices.Equal(d.IDs, []string{a.ID, b.ID}) {
		t.Fatalf("both finished: %v", d.IDs)
	}
	if d, _ := w.lead.Collect(ctx, []string{a.ID, b.ID}); d.Kind != "empty" {
		t.Fatalf("all excluded, nothing running: %+v", d)
	}

	// Children leased by a live wait are skipped.
	pid, start := procident.Self()
	if err := w.worker.Lease(ctx, "/proj", "", pid, start, time.Now().Add(time.Minute), a.ID); err != nil {
		t.Fatal(err)
	}
	if d, _ := w.lead.Collect(ctx, nil); !slices.Equal(d.IDs, []string{b.ID}) {
		t.Fatalf("with p1 leased: %v", d.IDs)
	}
	// A lease whose owner is gone hides nothing.
	if err := w.worker.Lease(ctx, "/proj", "", 1<<22, 1, time.Now().Add(time.Minute), b.ID); err != nil {
		t.Fatal(err)
	}
	if d, _ := w.lead.Collect(ctx, []string{}); !slices.Equal(d.IDs, []string{b.ID}) {
		t.Fatalf("with a dead waiter's lease on p2: %v", d.IDs)
	}
}

func TestWait(t *testing.T) {
	w := newWorld(t)
	var finished []registry.Row
	for range MaxOwedShown + 2 {
		row := w.child("done")
		w.finish(row, spawn.Succeeded)
		finished = append(finished, row)
	}
	runningA, runningB := w.child("a"), w.child("b")

	// Times out with both running: 124, the oldest 32 owed, nothing
	// consumed with observe off.
	res, err := w.lead.Wait(ctx, WaitOptions{Timeout: 200 * time.Millisecond})
	if err != nil || !res.TimedOut || res.ExitCode() != 124 || len(res.Owed) != MaxOwedShown || len(res.Pending) != 2 {
		t.Fatalf("timeout: %+v %v", res, err)
	}
	if res.Owed[0].ID != "p1" || res.Owed[MaxOwedShown-1].ID != finished[MaxOwedShown-1].ID {
		t.Fatalf("owed order: %s … %s", res.Owed[0].ID, res.Owed[MaxOwedShown-1].ID)
	}
	if len(w.owedIDs()) != MaxOwedShown+2 {
		t.Fatal("an unobserved wait consumed")
	}

	// Observed, the owed ones it returns are consumed and the runs are
	// waited for; one failing makes the exit 1.
	go func() {
		time.Sleep(100 * time.Millisecond)
		w.finish(runningA, spawn.Succeeded)
		w.finish(runningB, spawn.Failed)
	}()
	var order []string
	res, err = w.lead.Wait(ctx, WaitOptions{Observe: true, Finished: func(f Finished) { order = append(order, f.Row.ID) }})
	if err != nil || res.ExitCode() != 1 || len(res.Runs) != 2 || len(order) != 2 || res.Runs[0].Report == "" && res.Runs[1].Report == "" {
		t.Fatalf("observed wait: %+v %v", res, err)
	}
	w.expectOwed("after the wait", finished[MaxOwedShown].ID, finished[MaxOwedShown+1].ID)

	// Explicit ids: already finished ones return at once; unknown ids fail
	// before anything is leased.
	res, err = w.lead.Wait(ctx, WaitOptions{IDs: []string{"p1"}, Observe: true})
	if err != nil || res.ExitCode() != 0 || len(res.Runs) != 1 || res.Runs[0].Report != "body of p1" {
		t.Fatalf("wait p1: %+v %v", res, err)
	}
	if _, err := w.lead.Wait(ctx, WaitOptions{IDs: []string{"p1", "p404"}, Observe: true}); !errors.Is(err, registry.ErrNotFound) {
		t.Fatalf("wait on an unknown id: %v", err)
	}
	if leased, _ := w.worker.Leased(ctx, "/proj", "", procident.Alive); len(leased) != 0 {
		t.Fatalf("leases left: %v", leased)
	}

	// Fail-fast returns at the first failure, the other run still pending.
	c, d := w.child("c"), w.child("d")
	w.finish(c, spawn.Failed)
	res, err = w.lead.Wait(ctx, WaitOptions{IDs: []string{c.ID, d.ID}, FailFast: true})
	if err != nil || res.ExitCode() != 1 || len(res.Pending) != 1 || res.Pending[0].ID != d.ID {
		t.Fatalf("fail-fast: %+v %v", res, err)
	}
}

// startProcess runs a shell script as a stand-in worker and returns its
// pid and start time once the script says "ready"; the process is killed
// when the test ends.
func startProcess(t *testing.T, script string) (*exec.Cmd, uint64) {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if line, err := bufio.NewReader(stdout).ReadString('\n'); line != "ready\n" {
		t.Fatalf("stand-in worker: %q %v", line, err)
	}
	start, err := procident.StartTime(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	return cmd, start
}

func TestCancel(t *testing.T) {
	w := newWorld(t)
	w.lead.CancelWait = 300 * time.Millisecond

	// Queued, no worker yet: cancelled here and consumed.
	queued, err := w.lead.Create(ctx, Spec{Prompt: "never started"})
	if err != nil {
		t.Fatal(err)
	}
	out, err := w.lead.Cancel(ctx, []string{queued.ID}, true)
	if err != nil || out[0].Row.Status != spawn.Cancelled || out[0].Row.Origin != spawn.Cancel || out[0].Ended {
		t.Fatalf("cancel queued: %+v %v", out, err)
	}
	// The worker, starting late, may not run it.
	if err := w.worker.Start(ctx, "/proj", queued.ID, 1, 1); !errors.Is(err, registry.ErrTransition) {
		t.Fatalf("start after cancel: %v", err)
	}

	// A worker that dies on SIGTERM without finalizing: cancel writes it;
	// --no-observe leaves it owed.
	dies, _ := w.lead.Create(ctx, Spec{Prompt: "dies"})
	cmd, start := startProcess(t, "echo ready; exec sleep 60")
	if err := w.worker.Start(ctx, "/proj", dies.ID, cmd.Process.Pid, start); err != nil {
		t.Fatal(err)
	}
	out, err = w.lead.Cancel(ctx, []string{dies.ID}, false)
	if err != nil || out[0].Row.Status != spawn.Cancelled {
		t.Fatalf("cancel a worker that dies: %+v %v", out, err)
	}
	w.expectOwed("after cancel --no-observe", dies.ID)

	// A worker that ignores SIGTERM past the wait: still running, not
	// consumed; once it finalizes the lead is owed it.
	stubborn, _ := w.lead.Create(ctx, Spec{Prompt: "stubborn"})
	cmd2, start2 := startProcess(t, `trap "" TERM; echo ready; exec sleep 60`)
	if err := w.worker.Start(ctx, "/proj", stubborn.ID, cmd2.Process.Pid, start2); err != nil {
		t.Fatal(err)
	}
	out, err = w.lead.Cancel(ctx, []string{stubborn.ID}, true)
	if err != nil || out[0].Row.Status != spawn.Running {
		t.Fatalf("cancel a stubborn worker: %+v %v", out, err)
	}
	w.finish(stubborn, spawn.Cancelled)
	w.expectOwed("once the stubborn worker finalized", dies.ID, stubborn.ID)

	// Already ended; unknown ids refuse the whole command.
	out, err = w.lead.Cancel(ctx, []string{dies.ID}, true)
	if err != nil || !out[0].Ended {
		t.Fatalf("cancel an ended spawn: %+v %v", out, err)
	}
	if _, err := w.lead.Cancel(ctx, []string{stubborn.ID, "p99"}, true); !errors.Is(err, registry.ErrNotFound) {
		t.Fatalf("cancel with an unknown id: %v", err)
	}
	w.expectOwed("after the refused cancel", stubborn.ID)
}

func TestReconcile(t *testing.T) {
	w := newWorld(t)
	later := time.Now().Add(10 * time.Minute)
	w.lead.Now = func() time.Time { return later }
	alive := w.child("alive")
	dead, _ := w.lead.Create(ctx, Spec{Prompt: "dead"})
	cmd, start := startProcess(t, "echo ready; exec sleep 60")
	if err := w.worker.Start(ctx, "/proj", dead.ID, cmd.Process.Pid, start); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()

	nested := *w.lead
	nested.Depth = 1
	nested.Reconcile(ctx)
	if row, _ := w.lead.Registry.Get(ctx, "/proj", dead.ID); row.Status != spawn.Running {
		t.Fatalf("a nested caller reaped: %s", row.Status)
	}
	w.lead.Reconcile(ctx)
	if row, _ := w.lead.Registry.Get(ctx, "/proj", dead.ID); row.Status != spawn.Failed || row.Error != "orphan_run" {
		t.Fatalf("dead runner: %s %q", row.Status, row.Error)
	}
	if row, _ := w.lead.Registry.Get(ctx, "/proj", alive.ID); row.Status != spawn.Running {
		t.Fatalf("live runner reaped: %s", row.Status)
	}
	// The runner's word, even later, replaces the reaper's guess.
	if won, _ := w.worker.Finalize(ctx, "/proj", dead.ID, registry.Final{Status: spawn.Succeeded, Origin: spawn.Runner}); !won {
		t.Fatal("the runner lost to the reaper")
	}
}

func TestFindProject(t *testing.T) {
	root := t.TempDir()
	sub := filepath.Join(root, "a", "b")
	if err := os.MkdirAll(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	if p, err := FindProject(sub); err != nil || p != sub {
		t.Fatalf("no git: %s %v", p, err)
	}
	if err := os.WriteFile(filepath.Join(root, ".git"), []byte("gitdir: elsewhere"), 0o600); err != nil {
		t.Fatal(err)
	}
	if p, err := FindProject(sub); err != nil || p != root {
		t.Fatalf("in a work tree: %s %v", p, err)
	}
	if _, err := FindProject(filepath.Join(root, "missing")); err == nil {
		t.Fatal("a missing directory is a project")
	}
}

func TestRenderLog(t *testing.T) {
	in := strings.Join([]string{
		`{"type":"system","subtype":"init","session_id":"s1","model":"m","cwd":"/w"}`,
		`{"type":"stream_event","event":{}}`,
		`{"type":"assistant","message":{"content":[{"type":"text","text":"looking"},{"type":"tool_use","name":"Bash","input":{"command":"ls"}}]}}`,
		`{"type":"user","message":{"content":[{"type":"tool_result","content":"a.go\nb.go","is_error":false}]}}`,
		`not json`,
		`{"type":"result","subtype":"success","num_turns":2,"total_cost_usd":0.5,"duration_ms":1500}`,
	}, "\n")
	var b strings.Builder
	if err := RenderLog(strings.NewReader(in), &b); err != nil {
		t.Fatal(err)
	}
	want := "session s1 · model m · /w\nassistant: looking\ntool: Bash {\"command\":\"ls\"}\ntool result: a.go b.go\nnot json\ndone (success) · 2 turns · $0.5000 · 1.5s\n"
	if b.String() != want {
		t.Fatalf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}

// A primary (a meridian claude session) leads its own children, is owed
// to nobody, cannot be cancelled as a spawn, and ends with its session.
func TestPrimary(t *testing.T) {
	w := newWorld(t)
	cmd, start := startProcess(t, "echo ready; exec sleep 60")
	p, err := w.lead.StartPrimary(ctx, "claude interactive session", cmd.Process.Pid, start)
	if err != nil {
		t.Fatal(err)
	}
	if p.ID != "p1" || p.Kind != registry.KindPrimary || p.Status != spawn.Running || p.Started.IsZero() {
		t.Fatalf("primary = %+v", p)
	}
	session := *w.lead
	session.ID = p.ID
	c, err := session.Create(ctx, Spec{Prompt: "do it"})
	if err != nil || c.ParentID != "p1" || c.Depth != 1 {
		t.Fatalf("the session's child = %+v, %v", c, err)
	}
	if rows, _ := w.lead.List(ctx, "", false); len(rows) != 0 {
		t.Fatalf("the root lead lists %+v", rows)
	}
	if _, err := w.lead.Cancel(ctx, []string{"p2", "p1"}, true); err == nil || !strings.Contains(err.Error(), "p1 is a lead's own claude session") {
		t.Fatalf("cancel of a primary: %v", err)
	}
	if got, _ := w.lead.Get(ctx, "p2"); got.Status != spawn.Queued {
		t.Fatalf("a refused cancel touched p2: %s", got.Status)
	}

	// The session ends: the reaper (past its grace) finalizes the primary,
	// and the root lead is owed nothing.
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	w.lead.ReapGrace = time.Nanosecond
	if got, _ := w.lead.Get(ctx, "p1"); got.Status != spawn.Succeeded || got.Origin != spawn.Reconciler {
		t.Fatalf("after its session ended the primary is %s (%s)", got.Status, got.Origin)
	}
	w.expectOwed("after the session ended")
}

// Folders of children the lead has seen are pruned once they are older
// than the retention; an owed child's folder and a running one's stay,
// and so do all the rows.
func TestPruneFolders(t *testing.T) {
	w := newWorld(t)
	seen1, seen2, owed, running := w.child("seen 1"), w.child("seen 2"), w.child("owed"), w.child("running")
	for _, r := range []registry.Row{seen1, seen2, owed} {
		w.finish(r, spawn.Succeeded)
	}
	if err := w.lead.Registry.Consume(ctx, "/proj", "", "test", seen1.ID, seen2.ID); err != nil {
		t.Fatal(err)
	}
	w.lead.Retention = time.Hour
	w.lead.Now = func() time.Time { return time.Now().Add(30 * time.Minute) }
	if n, err := w.lead.PruneFolders(ctx); err != nil || n != 0 {
		t.Fatalf("within the retention: pruned %d, %v", n, err)
	}
	w.lead.Now = func() time.Time { return time.Now().Add(2 * time.Hour) }
	if n, err := w.lead.PruneFolders(ctx); err != nil || n != 2 {
		t.Fatalf("pruned %d, %v", n, err)
	}
	for r, want := range map[registry.Row]bool{seen1: false, seen2: false, owed: true, running: true} {
		if _, err := os.Stat(r.Dir); (err == nil) != want {
			t.Errorf("%s (%s): folder kept %v, want %v", r.ID, r.Desc, err == nil, want)
		}
	}
	if rows, _ := w.lead.Registry.List(ctx, "/proj"); len(rows) != 4 {
		t.Fatalf("%d rows left", len(rows))
	}
	w.finish(running, spawn.Succeeded)
	w.lead.ReadOnly = true
	if n, _ := w.lead.PruneFolders(ctx); n != 0 {
		t.Fatal("a read-only lead pruned")
	}
}
