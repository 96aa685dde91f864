// Package procmem reads the memory figures Linux reports in /proc: a
// process's proportional or resident size, the machine's total and
// available memory. Every figure there is a "Name:   1234 kB" line.
package procmem

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// Field reads the line name (with its colon) of a /proc file, in bytes.
func Field(path, name string) (int64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	return parse(b, name)
}

func parse(b []byte, name string) (int64, bool) {
	for line := range bytes.Lines(b) {
		rest, ok := bytes.CutPrefix(line, []byte(name))
		if !ok {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) == 0 {
			return 0, false
		}
		kb, err := strconv.ParseInt(string(f[0]), 10, 64)
		return kb << 10, err == nil
	}
	return 0, false
}

// Process is what a process holds: its proportional set size (pages it
// shares counted once among their users), or its resident size where the
// kernel reports no PSS.
func Process(pid int) (int64, bool) {
	if n, ok := Field(fmt.Sprintf("/proc/%d/smaps_rollup", pid), "Pss:"); ok {
		return n, true
	}
	return Field(fmt.Sprintf("/proc/%d/status", pid), "VmRSS:")
}

// Machine reads a /proc/meminfo line: "MemTotal:", "MemAvailable:".
func Machine(name string) (int64, bool) { return Field("/proc/meminfo", name) }
