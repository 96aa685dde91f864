package claude

import "github.com/meridian-gw/meridian/internal/backend/subproc"

// The driver launches through package subproc; these names keep its own
// vocabulary.
type (
	Spec         = subproc.Spec
	Proc         = subproc.Proc
	Launcher     = subproc.Launcher
	ExecLauncher = subproc.ExecLauncher
)
