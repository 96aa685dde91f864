//go:build !unix

package workdir

import "os"

// Without flock a folder's lock cannot be asked about: every folder
// counts as held, and Sweep removes nothing.
func lock(*os.File) error { return nil }

func tryLock(*os.File) (bool, error) { return false, nil }
