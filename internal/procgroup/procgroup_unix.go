//go:build unix

package procgroup

import (
	"syscall"
)

var errGone = syscall.ESRCH

func prepare(a *syscall.SysProcAttr) { a.Setpgid = true }
func detach(a *syscall.SysProcAttr)  { a.Setsid = true }

// job has nothing to hold on Unix: the group is the leader's pid.
type job struct{}

func newJob(int) (job, error) { return job{}, nil }
func (job) close()            {}

// The group id is the leader's pid (Setpgid with Pgid 0).
func (g *Group) signal(sig syscall.Signal) error    { return syscall.Kill(-g.pid, sig) }
func signalPid(pid int, sig syscall.Signal) error   { return syscall.Kill(pid, sig) }
func signalGroup(pid int, sig syscall.Signal) error { return syscall.Kill(-pid, sig) }
func lower(pid int)                                 { _ = syscall.Setpriority(syscall.PRIO_PGRP, pid, 19) }

// Freeze stops a group where it stands and Thaw lets it go on: an idle
// CLI costs no CPU while frozen.
const (
	Freeze = syscall.SIGSTOP
	Thaw   = syscall.SIGCONT
)
