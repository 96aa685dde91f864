package gateway

import (
	"github.com/meridian-gw/meridian/internal/anthropic"
	"github.com/meridian-gw/meridian/internal/backend"
	"github.com/meridian-gw/meridian/internal/telemetry"
)

// emitter relays a turn's events to r, noting on tr when the first
// content reaches the client.
func (g *Gateway) emitter(tr *telemetry.Trace, r *relay) func(*backend.Event) error {
	first := tr != nil
	return func(ev *backend.Event) error {
		g.observe(ev)
		if first && ev.Kind == backend.BlockDelta {
			first = false
			tr.FirstByte(g.cfg.Now())
		}
		return r.handle(ev)
	}
}

func tokensOf(u anthropic.Usage) telemetry.Tokens {
	return telemetry.Tokens{Input: int64(u.InputTokens), Output: int64(u.OutputTokens),
		CacheRead: int64(u.CacheReadInputTokens), CacheWrite: int64(u.CacheCreationInputTokens)}
}
