package subproc

import "syscall"

// dieWithParent makes the CLI die with this process, even one killed
// with SIGKILL that joins nothing (Pdeathsig). The kernel ties the signal
// to the thread that forks, so the fork runs on a locked thread; Go parks
// idle threads rather than ending them, and nothing here exits a
// goroutine while locked, so that thread lives as long as the process.
func dieWithParent(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
