// Package procmem reads the figures Linux reports in /proc: a process's
// proportional or resident size and the CPU time it used, the machine's
// total and available memory. Every memory figure there is a
// "Name:   1234 kB" line.
package procmem

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"
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

// userHZ is the unit of /proc's CPU times: Linux reports them in 1/100 s
// whatever the kernel's own tick.
const userHZ = 100

// CPU is the CPU time a process has used, user and system, from its stat
// line; false once it is gone.
func CPU(pid int) (time.Duration, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	return cpuOf(b)
}

// cpuOf reads utime and stime, the 14th and 15th fields, counted after
// the command name's closing parenthesis (the name may hold spaces).
func cpuOf(stat []byte) (time.Duration, bool) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, false
	}
	f := bytes.Fields(stat[i+1:])
	if len(f) < 13 {
		return 0, false
	}
	utime, err1 := strconv.ParseInt(string(f[11]), 10, 64)
	stime, err2 := strconv.ParseInt(string(f[12]), 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(utime+stime) * time.Second / userHZ, true
}
