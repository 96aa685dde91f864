//go:build darwin || freebsd || netbsd || openbsd

package profile

import "golang.org/x/sys/unix"

// The terminal attribute requests, named per kernel.
const (
	termiosGet = unix.TIOCGETA
	termiosSet = unix.TIOCSETA
)
