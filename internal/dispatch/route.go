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
	// Hosts lists the hosts whose heartbeat has not expired, with the
	// load each reported at its last beat.
	Hosts(ctx context.Context) ([]store.Host, error)
	// Unreachable says o's host refused a connection or broke one off:
	// it is taken for gone until it beats again.
	Unreachable(ctx context.Context, o store.Owner)
}

// Target is the host a request is best answered on: the one whose CLI
// holds its conversation.
type Target struct {
	Owner store.Owner // the process
	Host  string      // its host id
	Addr  string      // where it is reached
}

// Route names the other host that holds the conversation c belongs to —
// its live process, or at least the transcript its CLI wrote — when that
// host is alive, serving and reachable; ok is false when this host should
// answer itself: one this process holds, one whose holder is gone or
// draining, or when any of that cannot be known now. A new conversation
// is answered here unless every process slot here is taken: then on the
// serving host that reported the fewest running turns, if that is fewer
// than here.
func (d *Dispatcher) Route(ctx context.Context, c Call) (Target, bool) {
	if d.cfg.Hosts == nil {
		return Target{}, false
	}
	gw := d.choose(ctx, c)
	if gw == nil {
		return Target{}, false // no profile it may use: refused here
	}
	holder, err := gw.HeldBy(ctx, c.Request)
	if err != nil {
		d.log.Warn("store: could not look up which host holds the conversation; this one answers", "err", err)
		return Target{}, false
	}
	if holder.Host == "" {
		return d.place(ctx, gw)
	}
	if holder == d.cfg.Hosts.Self() {
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
	return Target{Owner: h.Owner, Host: h.Host, Addr: h.Addr}, true
}

// place chooses the host for a new conversation: this one while it has
// a free process slot, else the least loaded other serving host.
func (d *Dispatcher) place(ctx context.Context, gw Answerer) (Target, bool) {
	running, _, size := gw.Slots()
	if running < size {
		return Target{}, false
	}
	hosts, err := d.cfg.Hosts.Hosts(ctx)
	if err != nil {
		d.log.Warn("store: could not list the hosts to place a new conversation; this one answers", "err", err)
		return Target{}, false
	}
	self := d.cfg.Hosts.Self()
	var best store.Host
	found := false
	for _, h := range hosts {
		if h.Owner == self || h.State != store.HostServing || h.Addr == "" || h.Running >= running {
			continue
		}
		if !found || h.Running < best.Running {
			best, found = h, true
		}
	}
	if !found {
		return Target{}, false
	}
	return Target{Owner: best.Owner, Host: best.Host, Addr: best.Addr}, true
}
