// Package procgroup starts a process at the head of a group of its own —
// a process group on Unix, a job object on Windows — so that it and
// everything it starts are signalled, and ended, together.
package procgroup

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// Prepare makes cmd start a group of its own; what else cmd.SysProcAttr
// holds is kept.
func Prepare(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	prepare(cmd.SysProcAttr)
}

// Detach makes cmd start apart from this process: its own session on
// Unix, no console of this one's on Windows. It outlives this process.
func Detach(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	detach(cmd.SysProcAttr)
}

// DieWithParent asks the kernel to send cmd sig when this process dies
// (Linux); elsewhere a group's job ends it (Windows) or nothing does.
func DieWithParent(cmd *exec.Cmd, sig syscall.Signal) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	dieWithParent(cmd.SysProcAttr, sig)
}

// Group is a started process's group.
type Group struct {
	pid int
	job job
}

// Attach takes the group of a process Prepare started; on Windows it puts
// the process in a job object here, which its children join as they
// start, and which ends them all when this process exits.
func Attach(p *os.Process) (*Group, error) {
	j, err := newJob(p.Pid)
	if err != nil {
		return nil, err
	}
	return &Group{pid: p.Pid, job: j}, nil
}

// Signal signals the whole group. SIGKILL ends it at once; SIGTERM and
// SIGINT ask it to stop (on Windows a CTRL_BREAK to its console group). A
// group already gone is no error.
func (g *Group) Signal(sig syscall.Signal) error {
	return quiet(g.signal(sig))
}

// Release lets the group's handle go (Windows); the processes run on.
func (g *Group) Release() { g.job.close() }

// Signal signals one process, by pid; one already gone is no error.
func Signal(pid int, sig syscall.Signal) error { return quiet(signalPid(pid, sig)) }

// SignalGroup signals the group pid heads, known only by that pid (no
// Group in hand, as for a process started by another run of meridian): on
// Windows, whose groups are jobs, SIGKILL ends that process alone.
func SignalGroup(pid int, sig syscall.Signal) error { return quiet(signalGroup(pid, sig)) }

// Lower gives the group pid heads the least CPU priority.
func Lower(pid int) { lower(pid) }

func quiet(err error) error {
	if errors.Is(err, os.ErrProcessDone) || errors.Is(err, errGone) {
		return nil
	}
	return err
}
