// Package workdir owns the private folders CLI sessions run in. Each is
// made with a lock file that the gateway and the session's CLI (and what
// the CLI starts) hold open for as long as any of them lives, so a folder
// whose lock nobody holds belongs to a session that is gone: Sweep, at
// the gateway's next start, removes the folders a killed gateway left.
package workdir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// lockName is the lock file in each folder.
const lockName = ".meridian-session.lock"

// unlockedGrace is how old a folder without a lock file must be before
// Sweep removes it: one made a moment ago may not have its lock yet.
const unlockedGrace = time.Minute

// Dir is one session's folder, locked while the session lives.
type Dir struct {
	Path string
	lock *os.File
}

// Make creates a new folder under root, named prefix and random
// characters, and takes its lock.
func Make(root, prefix string) (*Dir, error) {
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("session folder: %w", err)
	}
	path, err := os.MkdirTemp(root, prefix)
	if err != nil {
		return nil, fmt.Errorf("session folder: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(path, lockName), os.O_CREATE|os.O_RDWR, 0o600)
	if err == nil {
		if err = lock(f); err != nil {
			_ = f.Close()
		}
	}
	if err != nil {
		_ = os.RemoveAll(path)
		return nil, fmt.Errorf("session folder lock: %w", err)
	}
	return &Dir{Path: path, lock: f}, nil
}

// Lock is the held lock file, to pass to the session's CLI (as an extra
// file it inherits): then the folder counts as held while the CLI or
// anything it started lives, even when the gateway is gone.
func (d *Dir) Lock() *os.File { return d.lock }

// Remove deletes the folder and lets its lock go.
func (d *Dir) Remove() error {
	err := os.RemoveAll(d.Path)
	if cerr := d.lock.Close(); err == nil && !errors.Is(cerr, os.ErrClosed) {
		err = cerr
	}
	return err
}

// Sweep removes the folders under root that no process holds: those of
// sessions whose gateway was killed. Folders whose lock is held (a live
// session, of this gateway or another on the same data folder) are left,
// as is anything that is not a folder. It returns the folders removed.
func Sweep(root string) ([]string, error) {
	entries, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sweep %s: %w", root, err)
	}
	var removed []string
	var errs []error
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		path := filepath.Join(root, e.Name())
		free, err := unheld(path)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !free {
			continue
		}
		if err := os.RemoveAll(path); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, path)
	}
	return removed, errors.Join(errs...)
}

// unheld reports whether no process holds the folder's lock. A folder
// without one counts as unheld once it is older than unlockedGrace.
func unheld(path string) (bool, error) {
	f, err := os.OpenFile(filepath.Join(path, lockName), os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		info, serr := os.Stat(path)
		if serr != nil {
			return false, serr
		}
		return time.Since(info.ModTime()) > unlockedGrace, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	return tryLock(f)
}
