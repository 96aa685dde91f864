// Package procident tells whether a recorded process is still the same process:
// a pid alone is not enough, since pids are reused, so its start time
// (from /proc, in clock ticks since boot) is recorded beside it.
package procident

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// StartTime returns a process's start time, in clock ticks since boot.
func StartTime(pid int) (uint64, error) {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces and parentheses; the
	// fields after its closing parenthesis are plain. starttime is field 22.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("proc %d: malformed stat", pid)
	}
	fields := bytes.Fields(stat[i+1:])
	const starttime = 22 - 3 // fields after ")" start at field 3
	if len(fields) <= starttime {
		return 0, fmt.Errorf("proc %d: short stat", pid)
	}
	if fields[0][0] == 'Z' {
		return 0, fmt.Errorf("proc %d: zombie", pid)
	}
	return strconv.ParseUint(string(fields[starttime]), 10, 64)
}

// Alive reports whether pid is running and is the process that started
// at start.
func Alive(pid int, start uint64) bool {
	if pid <= 0 {
		return false
	}
	got, err := StartTime(pid)
	return err == nil && got == start
}

// Self returns this process's pid and start time.
func Self() (int, uint64) {
	pid := os.Getpid()
	start, _ := StartTime(pid)
	return pid, start
}

// Owner names this process as a record's owner: "pid:start".
func Owner() string {
	pid, start := Self()
	return strconv.Itoa(pid) + ":" + strconv.FormatUint(start, 10)
}

// OwnerAlive reports whether the process an Owner string names still runs.
func OwnerAlive(owner string) bool {
	p, st, ok := strings.Cut(owner, ":")
	pid, err1 := strconv.Atoi(p)
	start, err2 := strconv.ParseUint(st, 10, 64)
	return ok && err1 == nil && err2 == nil && Alive(pid, start)
}
