package procmem_test

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/procmem"
	"github.com/meridian-gw/meridian/internal/testkit"
)

func TestImportsFlowDownward(t *testing.T) { testkit.CheckImports(t) }

func TestField(t *testing.T) {
	path := filepath.Join(t.TempDir(), "status")
	if err := os.WriteFile(path, []byte("Rss:     2048 kB\nPss:      512 kB\nBroken:\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if n, ok := procmem.Field(path, "Pss:"); !ok || n != 512<<10 {
		t.Fatalf("Pss %d %v", n, ok)
	}
	if _, ok := procmem.Field(path, "Broken:"); ok {
		t.Fatal("an empty field parsed")
	}
	if _, ok := procmem.Field(path, "Swap:"); ok {
		t.Fatal("a missing field parsed")
	}
}

func TestThisProcessAndMachine(t *testing.T) {
	if n, ok := procmem.Process(os.Getpid()); !ok || n <= 0 {
		t.Fatalf("this process: %d %v", n, ok)
	}
	if n, ok := procmem.Machine("MemTotal:"); !ok || n <= 0 {
		t.Fatalf("MemTotal %d %v", n, ok)
	}
}

// A tracker reads PSS once, follows small moves of the resident size
// without reading it again, and reads it again after a large one.
func TestTrackerFollowsTheResidentSize(t *testing.T) {
	tr := &procmem.Tracker{Pid: os.Getpid(), Slack: 64 << 20}
	first, ok := tr.Read()
	if !ok || first <= 0 {
		t.Fatalf("first read %d %v", first, ok)
	}
	again, _ := tr.Read()
	if d := again - first; d < -(4<<20) || d > 4<<20 {
		t.Fatalf("a read without a move gave %d after %d", again, first)
	}
	grown := make([]byte, 32<<20)
	for i := range grown {
		grown[i] = 1 // resident now
	}
	followed, _ := tr.Read()
	if d := followed - first; d < 24<<20 {
		t.Fatalf("32 MiB made resident moved the followed PSS by %d", d)
	}
	tight := &procmem.Tracker{Pid: os.Getpid(), Slack: 1}
	exact, _ := tight.Read()
	if pss, _ := procmem.Process(os.Getpid()); exact-pss > 4<<20 || pss-exact > 4<<20 {
		t.Fatalf("a tracker with no slack read %d, PSS is %d", exact, pss)
	}
	runtime.KeepAlive(grown)
}

// A process's CPU time is its user and system ticks; this one has used
// some, and one that is gone has none to read.
func TestCPU(t *testing.T) {
	deadline := time.Now().Add(50 * time.Millisecond)
	for time.Now().Before(deadline) {
	}
	if d, ok := procmem.CPU(os.Getpid()); !ok || d < 10*time.Millisecond {
		t.Fatalf("this process used %v (%v)", d, ok)
	}
	if _, ok := procmem.CPU(1 << 30); ok {
		t.Fatal("a process that is not there has a CPU time")
	}
}
