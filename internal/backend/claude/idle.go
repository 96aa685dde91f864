package claude

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"

	"github.com/meridian-gw/meridian/internal/backend"
)

// Freeze implements backend.Freezer: it stops the CLI's process group
// while the process waits for its conversation's next turn. An idle CLI
// otherwise polls files and timers several times a second.
func (p *Process) Freeze() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.inTurn || p.paused {
		return errors.New("claude: a process in a turn is not frozen")
	}
	if err := p.proc.Signal(syscall.SIGSTOP); err != nil {
		return fmt.Errorf("freeze claude: %w", err)
	}
	p.frozen = true
	return nil
}

// Thaw implements backend.Freezer.
func (p *Process) Thaw() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.frozen {
		return nil
	}
	p.frozen = false
	if err := p.proc.Signal(syscall.SIGCONT); err != nil {
		return fmt.Errorf("thaw claude: %w", err)
	}
	return nil
}

// Memory implements backend.Measurer: the process's proportional set size
// (its share of pages it shares with other claude processes counted once),
// from /proc; its resident size where PSS is not reported.
func (p *Process) Memory() (int64, error) {
	pid := p.proc.Pid()
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid)); err == nil {
		if kb, ok := field(b, "Pss:"); ok {
			return kb << 10, nil
		}
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("claude memory: %w", err)
	}
	if kb, ok := field(b, "VmRSS:"); ok {
		return kb << 10, nil
	}
	return 0, errors.New("claude memory: not reported")
}

// field reads a "Name:   1234 kB" line.
func field(b []byte, name string) (int64, bool) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		rest, ok := bytes.CutPrefix(sc.Bytes(), []byte(name))
		if !ok {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) == 0 {
			return 0, false
		}
		n, err := strconv.ParseInt(string(f[0]), 10, 64)
		return n, err == nil
	}
	return 0, false
}

// Bind implements backend.Binder: a spare becomes a conversation's
// process, with its system prompt and client tools.
func (p *Process) Bind(system []string, tools []backend.Tool) error {
	p.mu.Lock()
	if !p.unbound {
		p.mu.Unlock()
		return errors.New("claude: only a spare is bound")
	}
	p.unbound = false
	if len(tools) > 0 {
		p.tools = newToolset(tools)
	}
	p.mu.Unlock()
	return p.initialize(system)
}
