package subproc_test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
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
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", child)); err == nil && statField(b, 0) != "Z" {
			return fmt.Errorf("the group's child %d outlived Close", child)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// niceOf reads a process's nice value, field 19 of /proc/pid/stat.
func niceOf(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(statField(b, 16))
	if err != nil {
		t.Fatalf("/proc/%d/stat: %q", pid, b)
	}
	return n
}

// statField is the field i of /proc/pid/stat counted from the state (0),
// after the command name, which is in parentheses and may hold spaces.
func statField(stat []byte, i int) string {
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	if i >= len(fields) {
		return ""
	}
	return fields[i]
}
