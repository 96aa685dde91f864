package claude

import (
	"errors"
	"fmt"
	"time"

	"github.com/meridian-gw/meridian/internal/procgroup"

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
	if err := p.proc.Signal(procgroup.Freeze); err != nil {
		return fmt.Errorf("freeze claude: %w", err)
	}
	p.frozen = true
	return nil
}

// Settle implements backend.Freezer: the CLI's start-up work on a timer is
// its runtime's first idle collection, off unless the user's environment
// turns it on (see idleGCVar).
func (p *Process) Settle() time.Duration { return p.d.settle }

// Thaw implements backend.Freezer.
func (p *Process) Thaw() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.frozen {
		return nil
	}
	p.frozen = false
	if err := p.proc.Signal(procgroup.Thaw); err != nil {
		return fmt.Errorf("thaw claude: %w", err)
	}
	return nil
}

// Memory implements backend.Measurer: the process's proportional set size
// (its share of pages it shares with other claude processes counted once),
// from /proc, read again only when its resident size has moved (see
// procmem.Tracker); its resident size where PSS is not reported.
func (p *Process) Memory() (int64, error) {
	if n, ok := p.mem.Read(); ok {
		return n, nil
	}
	return 0, errors.New("claude memory: not reported")
}

// Bind implements backend.Binder: a spare becomes a conversation's
// process, with its system prompt and client tools.
func (p *Process) Bind(opts backend.StartOptions) error {
	p.mu.Lock()
	if !p.unbound {
		p.mu.Unlock()
		return errors.New("claude: only a spare is bound")
	}
	p.unbound = false
	if len(opts.Tools) > 0 {
		p.tools = newToolset(opts.Tools)
	}
	p.mu.Unlock()
	return p.initialize(opts.System, opts.JSONSchema)
}
