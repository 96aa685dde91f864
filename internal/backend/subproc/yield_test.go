package subproc_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/backend/subproc"
	"github.com/meridian-gw/meridian/internal/testkit"
)

// Yield lowers the CLI and what it started (its group) to the least
// priority; a process not yielded keeps its own through Close.
func TestYieldLowersTheGroup(t *testing.T) {
	pids := make(chan string, 1)
	p, err := subproc.Start(subproc.ExecLauncher{}, subproc.Spec{Path: "/bin/sh", Args: []string{"-c", "sleep 30 & echo $!; exec cat"}},
		subproc.Options{Line: func(line []byte, _ bool) { pids <- string(line) }})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(nil)
	line := <-pids
	child, err := strconv.Atoi(line)
	if err != nil || child <= 0 {
		t.Fatalf("child pid %q", line)
	}
	leader := p.Pid()
	if n := niceOf(t, leader); n != 0 {
		t.Fatalf("nice %d before Yield", n)
	}
	p.Yield()
	for _, pid := range []int{leader, child} {
		if n := niceOf(t, pid); n != 19 {
			t.Errorf("pid %d: nice %d after Yield, want 19", pid, n)
		}
	}
	p.Close(nil)
	if err := testkit.WaitFor(5*time.Second, func() error {
		// Gone, or dead and not yet reaped by whoever adopted it.
		if f := testkit.StatFields(child); len(f) > 0 && f[0] != "Z" {
			return fmt.Errorf("the group's child %d outlived Close", child)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// niceOf reads a process's nice value.
func niceOf(t *testing.T, pid int) int {
	t.Helper()
	f := testkit.StatFields(pid)
	if len(f) < 17 {
		t.Fatalf("/proc/%d/stat: %q", pid, f)
	}
	n, err := strconv.Atoi(f[16])
	if err != nil {
		t.Fatalf("/proc/%d/stat: %q", pid, f)
	}
	return n
}
