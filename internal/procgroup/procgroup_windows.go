//go:build windows

package procgroup

import (
	"errors"
	"fmt"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

var errGone = windows.ERROR_INVALID_PARAMETER // OpenProcess of a pid that is no more

// A new console process group: CTRL_BREAK reaches it alone.
func prepare(a *syscall.SysProcAttr) { a.CreationFlags |= windows.CREATE_NEW_PROCESS_GROUP }

func detach(a *syscall.SysProcAttr) {
	a.CreationFlags |= windows.CREATE_NEW_PROCESS_GROUP | windows.DETACHED_PROCESS
}

// job is a job object that ends its processes when its last handle
// closes: this process's, so nothing outlives meridian.
type job struct{ h windows.Handle }

func newJob(pid int) (job, error) {
	h, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return job{}, fmt.Errorf("job object: %w", err)
	}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{}
	info.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
	if _, err := windows.SetInformationJobObject(h, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		_ = windows.CloseHandle(h)
		return job{}, fmt.Errorf("job object: %w", err)
	}
	p, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(pid))
	if err != nil {
		_ = windows.CloseHandle(h)
		return job{}, fmt.Errorf("open process %d: %w", pid, err)
	}
	defer windows.CloseHandle(p)
	if err := windows.AssignProcessToJobObject(h, p); err != nil {
		_ = windows.CloseHandle(h)
		return job{}, fmt.Errorf("job object: %w", err)
	}
	return job{h: h}, nil
}

func (j job) close() {
	if j.h != 0 {
		_ = windows.CloseHandle(j.h)
	}
}

func (g *Group) signal(sig syscall.Signal) error {
	if sig == Freeze || sig == Thaw {
		return nil
	}
	if sig == syscall.SIGKILL && g.job.h != 0 {
		return windows.TerminateJobObject(g.job.h, 1)
	}
	return signalGroup(g.pid, sig)
}

func signalPid(pid int, sig syscall.Signal) error {
	if sig != syscall.SIGKILL {
		return signalGroup(pid, sig)
	}
	p, err := windows.OpenProcess(windows.PROCESS_TERMINATE, false, uint32(pid))
	if err != nil {
		return err
	}
	defer windows.CloseHandle(p)
	return windows.TerminateProcess(p, 1)
}

// signalGroup asks a console process group to stop with CTRL_BREAK (Go
// programs hear it as os.Interrupt); SIGKILL ends its head.
func signalGroup(pid int, sig syscall.Signal) error {
	switch sig {
	case syscall.SIGKILL:
		return signalPid(pid, sig)
	case syscall.SIGTERM, syscall.SIGINT:
		return windows.GenerateConsoleCtrlEvent(windows.CTRL_BREAK_EVENT, uint32(pid))
	case 0:
		p, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
		if err != nil {
			return err
		}
		return windows.CloseHandle(p)
	}
	return errors.New("signal not supported on Windows")
}

func lower(pid int) {
	p, err := windows.OpenProcess(windows.PROCESS_SET_INFORMATION, false, uint32(pid))
	if err != nil {
		return
	}
	defer windows.CloseHandle(p)
	_ = windows.SetPriorityClass(p, windows.IDLE_PRIORITY_CLASS)
}

// Freeze and Thaw are not carried out on Windows, which has no stop
// signal: an idle CLI there stays awake.
const (
	Freeze = syscall.Signal(0x100)
	Thaw   = syscall.Signal(0x101)
)
