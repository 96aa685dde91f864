package testkit_test

import (
	"os"
	"os/exec"
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// What a child spent before it exited and was waited for is in its
// parent's reaped count, not in its own.
func TestCPUTicksReapedKeepsAnExitedChild(t *testing.T) {
	self := os.Getpid()
	before, beforeOwn := testkit.CPUTicksReaped(self), testkit.CPUTicks(self)
	child := exec.Command("sh", "-c", "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done")
	if err := child.Run(); err != nil {
		t.Fatal(err)
	}
	spent := int(child.ProcessState.UserTime().Milliseconds()+child.ProcessState.SystemTime().Milliseconds()) / 10
	if spent < 5 {
		t.Fatalf("the child spent only %d ticks; the test needs it to spend some", spent)
	}
	reaped := testkit.CPUTicksReaped(self) - before - (testkit.CPUTicks(self) - beforeOwn)
	if reaped < spent-1 {
		t.Fatalf("reaped count grew %d ticks; the child spent %d", reaped, spent)
	}
}
