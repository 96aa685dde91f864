package dispatch

import (
	"context"

	"github.com/meridian-gw/meridian/internal/store"
)

// Hosts knows the meridians sharing the store (package cluster).
type Hosts interface {
	Self() store.Owner
	// Host is the heartbeat of o's host; ok is false once it has expired
	// or was never there.
	Host(ctx context.Context, o store.Owner) (h store.Host, ok bool, err error)
}

// Target is the host a request is best answered on: the one whose CLI
// holds its conversation.
type Target struct {
	Host string // its host id
	Addr string // where it is reached
}

// Route names the other host that holds the conversation c belongs to —
// its live process, or at least the transcript its CLI wrote — when that
// host is alive, serving and reachable; ok is false when this host should
// answer itself: a new conversation, one this process holds, one whose
// holder is gone or draining, or when any of that cannot be known now.
func (d *Dispatcher) Route(ctx context.Context, c Call) (Target, bool) {
	if d.cfg.Hosts == nil {
		return Target{}, false
	}
	holder, err := d.choose(ctx, c).HeldBy(ctx, c.Request)
	if err != nil {
		d.log.Warn("store: could not look up which host holds the conversation; this one answers", "err", err)
		return Target{}, false
	}
	if holder.Host == "" || holder == d.cfg.Hosts.Self() {
		return Target{}, false
	}
	h, ok, err := d.cfg.Hosts.Host(ctx, holder)
	if err != nil {
		d.log.Warn("store: could not read the heartbeat of the host that holds the conversation; this one answers", "holder", holder.Host, "err", err)
		return Target{}, false
	}
	if !ok || h.State != store.HostServing || h.Addr == "" {
		return Target{}, false
	}
	return Target{Host: h.Host, Addr: h.Addr}, true
}
