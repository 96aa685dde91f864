package procmem_test

import (
	"os"
	"path/filepath"
	"testing"

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
