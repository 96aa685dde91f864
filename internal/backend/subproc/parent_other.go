//go:build !linux

package subproc

import "syscall"

// dieWithParent has no kernel help outside Linux: a parent killed with
// SIGKILL leaves its CLI running until the CLI notices its closed stdin.
func dieWithParent(*syscall.SysProcAttr) {}
