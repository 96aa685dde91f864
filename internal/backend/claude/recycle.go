package claude

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// Recycle implements backend.Recycler: the CLI takes its conversation back
// to before its first message (its rewind_conversation request), so the
// process serves another conversation with the system prompt, tools and
// options it already has. Measured on the pinned CLI: the rewind takes
// 2–11 ms, and the next turn is a warm one (~45 ms, ~5 ticks of CPU)
// where a spare's first turn takes ~150 ms and its replacement's start
// ~0.55 s of CPU. The session id stays: the rewound messages are cut from
// the transcript, so the dropped conversation can no longer be resumed at
// its pins, and the next turn's transcript is the new conversation alone.
// Only a conversation that began in this process can be rewound so.
func (p *Process) Recycle(ctx context.Context) error {
	p.mu.Lock()
	switch {
	case p.broken != nil:
		err := p.broken
		p.mu.Unlock()
		return err
	case p.inTurn || p.paused:
		p.mu.Unlock()
		return errors.New("claude: a process in a turn is not recycled")
	case !p.fresh || p.root == "":
		p.mu.Unlock()
		return errors.New("claude: only a conversation that began in this process can be rewound")
	}
	root, last := p.root, p.last
	p.inTurn = true // no turn meanwhile
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.inTurn = false
		p.mu.Unlock()
	}()
	raw, err := p.request(ctx, "rewind_", rewindRequest{Subtype: "rewind_conversation", Target: root, LastSeen: last})
	if err != nil {
		p.markBroken(fmt.Errorf("rewind: %w", err))
		return fmt.Errorf("recycle claude: %w", err)
	}
	var r rewindResponse
	if err := json.Unmarshal(raw, &r); err != nil || !r.Rewound {
		p.markBroken(errors.New("the CLI did not rewind its conversation"))
		return fmt.Errorf("recycle claude: the CLI did not rewind its conversation (%s)", truncate(raw, 200))
	}
	p.mu.Lock()
	p.root = ""
	p.mu.Unlock()
	p.drainBetweenTurns()
	return nil
}

// drainBetweenTurns drops the lines a request between turns left for the
// next turn to read (the rewind's command_lifecycle note).
func (p *Process) drainBetweenTurns() {
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				return
			}
			if l.Type != "command_lifecycle" {
				p.log.Debug("claude wrote a line between turns; dropping it", "type", l.Type, "subtype", l.Subtype)
			}
		default:
			return
		}
	}
}
