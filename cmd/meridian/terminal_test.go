package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// ptyScreen runs a command under a pseudo-terminal, as a person's shell
// would, and keeps everything it shows.
type ptyScreen struct {
	tty    *os.File
	mu     sync.Mutex
	screen bytes.Buffer
}

func startPty(t *testing.T, cmd *exec.Cmd) *ptyScreen {
	t.Helper()
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 30, Cols: 120})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tty.Close() })
	term := &ptyScreen{tty: tty}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := tty.Read(buf)
			term.mu.Lock()
			term.screen.Write(buf[:n])
			term.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return term
}

// shown is what the terminal has shown so far.
func (term *ptyScreen) shown() string {
	term.mu.Lock()
	defer term.mu.Unlock()
	return term.screen.String()
}

// waitFor waits until the terminal shows want.
func (term *ptyScreen) waitFor(within time.Duration, want string) error {
	return testkit.WaitFor(within, func() error {
		if !strings.Contains(term.shown(), want) {
			return errors.New("no " + want + " yet")
		}
		return nil
	})
}
