package procgroup

import "syscall"

func dieWithParent(a *syscall.SysProcAttr, sig syscall.Signal) { a.Pdeathsig = sig }
