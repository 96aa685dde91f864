package filelock_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/filelock"
	"github.com/meridian-gw/meridian/internal/testkit"
)

func TestImportsFlowDownward(t *testing.T) {
	testkit.CheckImports(t, "golang.org/x/sys/windows")
}

// A second Lock waits for the first to be let go.
func TestLockWaitsForTheHolder(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "lock")
	unlock, err := filelock.Lock(path)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan func(), 1)
	go func() {
		u, err := filelock.Lock(path)
		if err != nil {
			t.Error(err)
		}
		got <- u
	}()
	select {
	case <-got:
		t.Fatal("the lock was taken twice")
	case <-time.After(200 * time.Millisecond):
	}
	unlock()
	(<-got)()
}
