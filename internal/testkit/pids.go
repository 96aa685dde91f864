package testkit

import (
	"os"
	"runtime"
	"syscall"
)

// Alive reports whether a process with this pid exists (a zombie counts:
// it is not yet joined).
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	if runtime.GOOS == "windows" { // FindProcess opened it: it exists
		_ = p.Release()
		return true
	}
	return p.Signal(syscall.Signal(0)) == nil
}

// Kill ends the process with this pid at once; one already gone is no
// error worth a test's notice.
func Kill(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}
