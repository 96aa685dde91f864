//go:build !linux

package procgroup

import "syscall"

// dieWithParent has no kernel help outside Linux: on Windows the group's
// job ends with this process; elsewhere a child notices its closed pipes.
func dieWithParent(*syscall.SysProcAttr, syscall.Signal) {}
