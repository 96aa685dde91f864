package runner

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/meridian-gw/meridian/internal/spawn"
	"github.com/meridian-gw/meridian/internal/spawn/registry"
	"github.com/meridian-gw/meridian/internal/store/sqlite"
)

func TestArtifacts(t *testing.T) {
	a := Artifacts(t.TempDir())
	if a.ReportComplete() || a.ReadReport() != "" {
		t.Fatal("a report before one was written")
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(string(a), old, old); err != nil {
		t.Fatal(err)
	}
	if got := a.LastActivity(); got.After(old.Add(time.Second)) {
		t.Fatalf("last activity of an untouched folder: %v", got)
	}
	if err := a.writeReport("done"); err != nil {
		t.Fatal(err)
	}
	if !a.ReportComplete() || a.ReadReport() != "done" {
		t.Fatal("report not published")
	}
	if _, err := os.Stat(a.Report() + ".tmp"); !os.IsNotExist(err) {
		t.Fatal("the temporary report was left behind")
	}
	if time.Since(a.LastActivity()) > time.Minute {
		t.Fatal("writing the report is not activity")
	}
}

// The heartbeat is touched at once and then on every beat until stopped.
func TestHeartbeat(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := Artifacts(t.TempDir())
		w := &Worker{Heartbeat: 20 * time.Millisecond}
		stop := w.beat(a)
		if _, err := os.Stat(a.Heartbeat()); err != nil {
			stop()
			t.Fatal(err)
		}
		for range 3 {
			time.Sleep(20 * time.Millisecond)
			synctest.Wait()
			if st, _ := os.Stat(a.Heartbeat()); !st.ModTime().Equal(time.Now()) {
				stop()
				t.Fatalf("not touched on the beat: %v, now %v", st.ModTime(), time.Now())
			}
		}
		stop()
		last := time.Now()
		time.Sleep(60 * time.Millisecond)
		if st, _ := os.Stat(a.Heartbeat()); !st.ModTime().Equal(last) {
			t.Fatal("the heartbeat went on after stop")
		}
	})
}

// A spawn folder left by an earlier run is never written over.
func TestLaunchRefusesAnExistingFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "p1")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	report := filepath.Join(dir, "report.md")
	if err := os.WriteFile(report, []byte("the old p1's report"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Launch("/bin/true", nil, nil, registry.Row{Dir: dir})
	if err == nil || !strings.Contains(err.Error(), "not written over") {
		t.Fatalf("Launch into an existing folder: %v", err)
	}
	if b, _ := os.ReadFile(report); string(b) != "the old p1's report" {
		t.Fatal("the old report was touched")
	}
}

// A worker started twice for one spawn runs it once.
func TestWorkerRunsOnlyAQueuedSpawn(t *testing.T) {
	ctx := t.Context()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "meridian.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	reg := registry.New(db)
	spawns := t.TempDir()
	row, err := reg.Create(ctx, registry.Row{Project: "/p", Spawn: spawn.Spawn{Status: spawn.Queued}, Prompt: "x"},
		func(id string) string { return filepath.Join(spawns, id) })
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Start(ctx, "/p", row.ID, os.Getpid(), 1); err != nil {
		t.Fatal(err)
	}
	w := &Worker{Registry: reg, ClaudePath: "/bin/false", Log: slog.New(slog.DiscardHandler)}
	if err := w.RunQueued(ctx, "/p", row.ID); err == nil || !strings.Contains(err.Error(), "not queued") {
		t.Fatalf("a running spawn was run again: %v", err)
	}
	if err := w.RunQueued(ctx, "/p", "p9"); !errors.Is(err, registry.ErrNotFound) {
		t.Fatalf("a missing spawn: %v", err)
	}
	if _, err := os.Stat(filepath.Join(spawns, row.ID)); !os.IsNotExist(err) {
		t.Fatalf("the refused worker made the spawn's folder: %v", err)
	}
}
