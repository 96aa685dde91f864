package profile

import "golang.org/x/sys/unix"

// The terminal attribute requests, named per kernel.
const (
	termiosGet = unix.TCGETS
	termiosSet = unix.TCSETS
)
