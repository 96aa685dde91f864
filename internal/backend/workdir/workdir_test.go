package workdir_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/backend/workdir"
)

// Sweep removes the folders whose lock nobody holds and keeps the rest:
// a live session's, one whose lock a child process inherited and still
// holds after the gateway let go, a fresh folder without a lock, and
// files that are not folders.
func TestSweepRemovesOnlyUnheldFolders(t *testing.T) {
	root := t.TempDir()
	live, err := workdir.Make(root, "session-")
	if err != nil {
		t.Fatal(err)
	}
	defer live.Remove()
	gone, err := workdir.Make(root, "session-")
	if err != nil {
		t.Fatal(err)
	}
	_ = gone.Lock().Close() // the gateway was killed: its lock went with it

	inherited, err := workdir.Make(root, "session-")
	if err != nil {
		t.Fatal(err)
	}
	child := exec.Command("sleep", "30")
	child.ExtraFiles = []*os.File{inherited.Lock()}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	_ = inherited.Lock().Close()

	old := filepath.Join(root, "session-old")
	fresh := filepath.Join(root, "session-fresh")
	for _, d := range []string{old, fresh} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	past := time.Now().Add(-time.Hour)
	if err := os.Chtimes(old, past, past); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(root, "notes.txt")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}

	removed, err := workdir.Sweep(root)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(removed)
	want := []string{gone.Path, old}
	slices.Sort(want)
	if !slices.Equal(removed, want) {
		t.Fatalf("removed %v, want %v", removed, want)
	}
	for _, p := range []string{live.Path, inherited.Path, fresh, file} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
	}
	// Once the child that held it is gone, the folder is swept.
	_ = child.Process.Kill()
	_ = child.Wait()
	if removed, err := workdir.Sweep(root); err != nil || !slices.Equal(removed, []string{inherited.Path}) {
		t.Fatalf("after the child: removed %v, %v", removed, err)
	}
	if removed, err := workdir.Sweep(filepath.Join(root, "absent")); err != nil || removed != nil {
		t.Fatalf("an absent root: %v %v", removed, err)
	}
}
