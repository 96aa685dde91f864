//go:build unix

package workdir

import (
	"errors"
	"os"
	"syscall"
)

// lock takes f's lock, which stays with the open file (and every process
// that inherits it) until the last of them closes it.
func lock(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}

// tryLock reports whether f's lock was free; it is let go again when f
// closes.
func tryLock(f *os.File) (bool, error) {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return false, nil
	}
	return err == nil, err
}
