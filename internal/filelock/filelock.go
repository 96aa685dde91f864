// Package filelock takes an exclusive advisory lock on a file, waiting
// for it: flock on Unix, LockFileEx on Windows. The lock goes with the
// open file: closing it (or the process ending) lets it go.
package filelock

import (
	"fmt"
	"os"
)

// Lock opens (creating) the file at path and waits for its exclusive
// lock; unlock closes the file, which lets the lock go.
func Lock(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	if err := lockFile(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { _ = f.Close() }, nil
}
