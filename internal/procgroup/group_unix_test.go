//go:build unix

package procgroup_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/procgroup"
	"github.com/meridian-gw/meridian/internal/testkit"
)

// A group's SIGKILL reaches what its head started, too; signalling a
// group that is gone is no error.
func TestGroupKillReachesChildren(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pid")
	cmd := exec.Command("sh", "-c", "sleep 600 & echo $! > "+pidFile+"; wait")
	procgroup.Prepare(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	g, err := procgroup.Attach(cmd.Process)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Release()
	var child int
	if err := testkit.WaitFor(5*time.Second, func() error {
		b, _ := os.ReadFile(pidFile)
		child, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		if child == 0 {
			return errors.New("no child yet")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := g.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if err := testkit.WaitFor(5*time.Second, func() error {
		if procgroup.Signal(child, 0) == nil && syscall.Kill(child, 0) == nil {
			return errors.New("the child lives")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := g.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("a gone group: %v", err)
	}
	if err := procgroup.Signal(child, syscall.SIGTERM); err != nil {
		t.Fatalf("a gone process: %v", err)
	}
}
