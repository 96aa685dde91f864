package gateway

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/meridian-gw/meridian/internal/anthropic"
	"github.com/meridian-gw/meridian/internal/backend"
	"github.com/meridian-gw/meridian/internal/capture"
	"github.com/meridian-gw/meridian/internal/telemetry"
	"github.com/meridian-gw/meridian/internal/tracing"
)

// DefaultStallTimeout is how long a turn may go without any output from
// the backend before it is taken for stalled.
const DefaultStallTimeout = 10 * time.Minute

// errStalled is why the watchdog ends a turn.
var errStalled = errors.New("gateway: the backend went silent")

// turn runs one backend turn under the stall watchdog: a backend that
// stays silent for StallTimeout (pings keep the client's stream alive, so
// nothing else would notice) has its turn cancelled, which interrupts it;
// the caller discards the process, which kills and joins it. Every event
// re-arms the watchdog. A paused turn waits for the client outside Turn,
// so a pending client tool call is never taken for a stall.
func (g *Gateway) turn(ctx context.Context, sess backend.Session, in backend.Input, emit func(*backend.Event) error) (*backend.Result, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	watchdog := time.AfterFunc(g.cfg.StallTimeout, func() { cancel(errStalled) })
	defer watchdog.Stop()
	if d := capture.From(ctx); d.Mode() == capture.Content {
		d.Wrote(written(g.cfg.CLI.Name, sess.ID(), in))
	}
	ctx, span := tracing.Start(ctx, g.cfg.CLI.Name+" turn", tracing.Client, tracing.Attr("meridian.session", sess.ID()))
	defer span.End()
	res, err := sess.Turn(ctx, in, func(ev *backend.Event) error {
		watchdog.Reset(g.cfg.StallTimeout)
		return emit(ev)
	})
	if res != nil {
		u := res.Usage
		// The result names no model where the CLI's stream did: the
		// request's record has it.
		answered, _ := telemetry.From(ctx).Usage()
		tracing.Response(span, cmp.Or(res.Model, answered), tracing.Usage{Input: int64(u.InputTokens), Output: int64(u.OutputTokens),
			CacheRead: int64(u.CacheReadInputTokens), CacheWrite: int64(u.CacheCreationInputTokens)}, res.StopReason)
	}
	tracing.Fail(span, err)
	if err != nil && errors.Is(context.Cause(ctx), errStalled) {
		g.log.WarnContext(ctx, g.cfg.CLI.Name+" went silent: its turn is stopped and its process closed", "silent_for", g.cfg.StallTimeout, "session", sess.ID())
		return res, &Error{Status: http.StatusGatewayTimeout, Type: anthropic.ErrTimeout, Message: fmt.Sprintf(
			"%s produced no output for %s and was stopped; nothing of this turn was kept, send the request again", g.cfg.CLI.Name, g.cfg.StallTimeout)}
	}
	return res, err
}

// writtenResult is one tool result as the inspector shows it.
type writtenResult struct {
	ToolUseID string            `json:"tool_use_id"`
	Content   []json.RawMessage `json:"content"`
	IsError   bool              `json:"is_error,omitempty"`
}

// written is what a turn gives the CLI, as the request inspector shows
// it: the user message's content and the tool results it answers.
func written(cli, session string, in backend.Input) any {
	results := make([]writtenResult, len(in.Results))
	for i, r := range in.Results {
		results[i] = writtenResult{ToolUseID: r.ToolUseID, Content: r.Content, IsError: r.IsError}
	}
	return struct {
		CLI     string            `json:"cli"`
		Session string            `json:"session"`
		Content []json.RawMessage `json:"content,omitempty"`
		Results []writtenResult   `json:"results,omitempty"`
	}{cli, session, in.Content, results}
}
