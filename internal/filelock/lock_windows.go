//go:build windows

package filelock

import (
	"math"
	"os"

	"golang.org/x/sys/windows"
)

func lockFile(f *os.File) error {
	var whole windows.Overlapped
	return windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK, 0, math.MaxUint32, math.MaxUint32, &whole)
}
