package testkit

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
)

// Pty runs a command under a pseudo-terminal, as a person's shell would,
// and keeps everything it shows.
type Pty struct {
	tty    *os.File
	mu     sync.Mutex
	screen bytes.Buffer
}

// StartPty starts cmd under a 30×120 terminal, closed when the test ends.
func StartPty(t *testing.T, cmd *exec.Cmd) *Pty {
	t.Helper()
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 30, Cols: 120})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tty.Close() })
	term := &Pty{tty: tty}
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

// Shown is what the terminal has shown so far.
func (term *Pty) Shown() string {
	term.mu.Lock()
	defer term.mu.Unlock()
	return term.screen.String()
}

// WaitFor waits until the terminal shows want.
func (term *Pty) WaitFor(within time.Duration, want string) error {
	return WaitFor(within, func() error {
		if !strings.Contains(term.Shown(), want) {
			return errors.New("no " + want + " yet")
		}
		return nil
	})
}

// Write types p on the terminal.
func (term *Pty) Write(p []byte) (int, error) { return term.tty.Write(p) }
