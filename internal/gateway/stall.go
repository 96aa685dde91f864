package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/meridian-gw/meridian/internal/anthropic"
	"github.com/meridian-gw/meridian/internal/backend"
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
	res, err := sess.Turn(ctx, in, func(ev *backend.Event) error {
		watchdog.Reset(g.cfg.StallTimeout)
		return emit(ev)
	})
	if err != nil && errors.Is(context.Cause(ctx), errStalled) {
		g.log.Warn(g.cfg.CLI.Name+" went silent: its turn is stopped and its process closed", "silent_for", g.cfg.StallTimeout, "session", sess.ID())
		return res, &Error{Status: http.StatusGatewayTimeout, Type: anthropic.ErrTimeout, Message: fmt.Sprintf(
			"%s produced no output for %s and was stopped; nothing of this turn was kept, send the request again", g.cfg.CLI.Name, g.cfg.StallTimeout)}
	}
	return res, err
}
