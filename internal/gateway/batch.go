package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/meridian-gw/meridian/internal/anthropic"
	"github.com/meridian-gw/meridian/internal/backend"
)

// The client tool calls of one upstream message are one batch: the client
// runs them together and answers them together. A batch is checked whole
// when its message ends: if any call's arguments break its tool's schema,
// no call of it reaches the client and the model gets every invalid
// call's error as the result of each call, so it can send the batch again
// mended. A client never receives half a batch whose other half the model
// is still being asked to redo.

// holdStopped notes a call whose arguments are complete.
func (r *relay) holdStopped(idx int) {
	r.blocks[idx].open = false
	r.pending = append(r.pending, idx)
}

// releaseBatch checks the pending calls and hands them to the client, or
// answers them all to the backend when one is invalid.
func (r *relay) releaseBatch() error {
	if len(r.pending) == 0 {
		return nil
	}
	batch := make([]*heldCall, 0, len(r.pending))
	for _, idx := range r.pending {
		batch = append(batch, r.blocks[idx].call)
	}
	idxs := r.pending
	r.pending = nil
	if refusal := r.checkBatch(batch); refusal != "" {
		for _, idx := range idxs {
			c := r.blocks[idx].call
			r.blocks[idx].call = nil
			if err := r.answer(backend.ToolResult{ToolUseID: c.id, IsError: true,
				Content: []json.RawMessage{anthropic.TextBlock(refusal)}}); err != nil {
				return err
			}
		}
		return nil
	}
	for _, idx := range idxs {
		if err := r.releaseCall(&r.blocks[idx]); err != nil {
			return err
		}
	}
	return nil
}

// checkBatch validates each call of a batch; it returns the refusal every
// call of the batch is answered with, "" when all are valid.
func (r *relay) checkBatch(batch []*heldCall) string {
	if r.tools == nil || r.answer == nil {
		return ""
	}
	var bad []string
	for i, c := range batch {
		if err := r.tools.validate(c.name, callInput(c)); err != nil {
			if len(batch) == 1 {
				return "Invalid tool call, not run: " + err.Error() + ". Call the tool again with arguments that match its schema."
			}
			bad = append(bad, fmt.Sprintf("call %d of %d (%s, id %s): %s", i+1, len(batch), c.name, c.id, err))
		}
	}
	if len(bad) == 0 {
		return ""
	}
	return fmt.Sprintf("Invalid tool call batch, not run: %d of the %d calls made together are invalid, so none of them ran. %s. "+
		"Make all %d calls again, with arguments that match their tools' schemas.", len(bad), len(batch), strings.Join(bad, "; "), len(batch))
}

// callInput is a call's arguments, {} for none.
func callInput(c *heldCall) []byte {
	if len(bytes.TrimSpace(c.input)) == 0 {
		return []byte("{}")
	}
	return c.input
}

// releaseCall hands one checked call to the client.
func (r *relay) releaseCall(b *block) error {
	c := b.call
	b.call = nil
	if err := r.begin(); err != nil {
		return err
	}
	b.client = r.next
	r.next++
	r.calls = append(r.calls, c.id)
	r.reply.startBlock(b.client, anthropic.BlockToolUse, c.start)
	if err := r.out.BlockStart(b.client, c.start); err != nil {
		return err
	}
	for _, d := range c.deltas {
		r.reply.addDelta(b.client, d)
		if err := r.out.BlockDelta(b.client, d); err != nil {
			return err
		}
	}
	return r.out.BlockStop(b.client)
}
