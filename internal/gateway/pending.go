package gateway

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/meridian-gw/meridian/internal/anthropic"
	"github.com/meridian-gw/meridian/internal/backend"
	"github.com/meridian-gw/meridian/internal/lineage"
	"github.com/meridian-gw/meridian/internal/replay"
)

// A session paused on client tool calls stands at no resumable message: the
// CLI holds the calls inside a turn. Its place is marked with a pin naming
// the calls, which only the live process that holds them can continue.
const pendingPrefix = "pending:"

func pendingPin(ids []string) string { return pendingPrefix + strings.Join(ids, ",") }

func pendingCalls(pin string) ([]string, bool) {
	rest, ok := strings.CutPrefix(pin, pendingPrefix)
	if !ok {
		return nil, false
	}
	return strings.Split(rest, ","), true
}

// withoutPendingEnd is the state as a fresh or resumed session can take it:
// the paused end is no place to resume at.
func withoutPendingEnd(st lineage.State) lineage.State {
	out := st
	if n := len(st.Pins); n > 0 {
		if _, pending := pendingCalls(st.Pins[n-1]); pending {
			out.Pins = slices.Clone(st.Pins)
			out.Pins[n-1] = ""
		}
	}
	return out
}

// input builds what the turn gives the session. A paused turn continues
// with the results of exactly its pending calls, and whatever else the
// user's new messages carry (beside the results or in messages after
// them) goes in as steering beside them; otherwise the messages the
// session lacks are rendered into one user message.
func (t *turn) input() (backend.Input, *Error) {
	msgs := t.sendFrom()
	if !t.reused || t.pending == nil {
		t.delivered = toolResultIDs(msgs)
		if t.verdict.Skip > 0 {
			// The results the session held in the message that gained
			// blocks are answered by this turn too.
			t.delivered = append(t.delivered, toolResultIDs(t.req.Messages[t.verdict.From:t.verdict.From+1])...)
		}
		return backend.Input{Content: replay.Render(msgs)}, nil
	}
	results := map[string]anthropic.ContentBlock{}
	var steering []anthropic.ContentBlock
	for _, m := range msgs {
		for _, b := range m.Content {
			if b.Type == anthropic.BlockToolResult {
				results[b.ToolUseID] = b
			} else {
				steering = append(steering, b)
			}
		}
	}
	var missing, unknown []string
	for _, id := range t.pending {
		if _, ok := results[id]; !ok {
			missing = append(missing, id)
		}
	}
	for id := range results {
		if !slices.Contains(t.pending, id) {
			unknown = append(unknown, id)
		}
	}
	if len(missing) > 0 {
		return backend.Input{}, InvalidRequest(fmt.Sprintf("messages.%d: tool_result missing for tool_use ids %s: every call of the batch needs its result",
			len(t.req.Messages)-1, strings.Join(missing, ", ")))
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return backend.Input{}, InvalidRequest(fmt.Sprintf("messages.%d: tool_result for tool_use ids %s, which the last assistant message did not call",
			len(t.req.Messages)-1, strings.Join(unknown, ", ")))
	}
	in := backend.Input{}
	for _, id := range t.pending {
		b := results[id]
		r := backend.ToolResult{ToolUseID: id, IsError: b.IsError}
		for _, c := range b.Content {
			r.Content = append(r.Content, c.Raw)
		}
		in.Results = append(in.Results, r)
	}
	if len(steering) > 0 {
		in.Content = replay.Render([]anthropic.Message{{Role: anthropic.RoleUser, Content: steering}})
	}
	t.delivered = slices.Clone(t.pending)
	return in, nil
}

// toolResultIDs lists the tool results in messages.
func toolResultIDs(msgs []anthropic.Message) []string {
	var ids []string
	for _, m := range msgs {
		for _, b := range m.Content {
			if b.Type == anthropic.BlockToolResult {
				ids = append(ids, b.ToolUseID)
			}
		}
	}
	return ids
}

// refuseRepeats refuses a request whose new tool results (those in its
// last message) the CLI already received and answered: a retried request
// must not run the tools' turn upstream a second time. Results further back
// are history and may be replayed.
func (t *turn) refuseRepeats(ctx context.Context) error {
	g := t.g
	last := t.req.Messages[len(t.req.Messages)-1:]
	if t.verdict.Skip > 0 && t.verdict.From == len(t.req.Messages)-1 {
		last = t.sendFrom() // its skipped blocks the session holds already
	}
	ids := toolResultIDs(last)
	if len(ids) == 0 {
		return nil
	}
	done, err := g.cfg.Sessions.Consumed(ctx, g.cfg.Profile, t.ident.Key, ids)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return g.storeFailure("look up the tool results already delivered", err)
	}
	if len(done) > 0 {
		return &Error{Status: http.StatusConflict, Type: "conflict_error", Message: fmt.Sprintf(
			"tool results for %s were already delivered and answered; send the conversation with that answer, or new results",
			strings.Join(done, ", "))}
	}
	return nil
}
