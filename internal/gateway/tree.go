package gateway

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/meridian-gw/meridian/internal/adapter"
	"github.com/meridian-gw/meridian/internal/anthropic"
)

// StatusCancelled answers a request that was cancelled on the server's
// side (its conversation, or one that started it, was cancelled): the
// client did not go away, so it hears why. SDKs do not retry it.
const StatusCancelled = 499

// errTreeCancelled is why a request is aborted through the session tree.
var errTreeCancelled = errors.New("gateway: cancelled with its conversation")

// enterTree registers a conversation request in the session tree for its
// lifetime. The returned context is cancelled when the request's
// conversation, or one above it, is cancelled; and when the request's own
// client goes away before its answer is complete, the requests of every
// conversation below it are cancelled too (a subagent's requests would
// otherwise run on, holding slots and spending). The conversation's own
// other requests are spared: a client that read its answer and hung up
// may already have sent the next turn. A shutdown or a finished request
// cascades nothing. The returned Output must carry the answer.
func (g *Gateway) enterTree(ctx context.Context, ident adapter.Identity, out Output) (context.Context, Output, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	leave := g.tree.Enter(g.cfg.Profile, ident.Key, ident.Parent, func() { cancel(errTreeCancelled) })
	tracked := &finishingOutput{Output: out}
	stop := context.AfterFunc(ctx, func() {
		if context.Cause(ctx) == context.Canceled && !tracked.finishing.Load() { // the client left early
			below := g.tree.CancelBelow(ident.Key)
			if len(below) > 0 {
				g.log.InfoContext(ctx, "the client went away: cancelled the conversations below it", "conversation", ident.Key, "cancelled", below)
			}
			g.spread(ident.Key, false, below)
		}
	})
	return ctx, tracked, func() {
		stop()
		leave()
		cancel(nil)
	}
}

// finishingOutput notes when the answer's end is being written: from then
// on the client has everything, and its leaving aborts nothing.
type finishingOutput struct {
	Output
	finishing atomic.Bool
}

func (o *finishingOutput) Finish(f Finish) error {
	o.finishing.Store(true)
	return o.Output.Finish(f)
}

func (o *finishingOutput) NameSession(id string) { nameSession(o.Output, id) }

// treeError is the answer of a request the tree cancelled.
func treeError(ctx context.Context, err error) error {
	if err != nil && errors.Is(context.Cause(ctx), errTreeCancelled) {
		return &Error{Status: StatusCancelled, Type: anthropic.ErrInvalidRequest,
			Message: "this request was cancelled: its conversation, or the one that started it, was cancelled"}
	}
	return err
}

// CancelSession cancels the running requests of conversation key and of
// every conversation below it. It reports the conversations it cancelled
// requests of, and whether key is known at all (running, or stored).
// Requests of those conversations on other hosts are cancelled there.
func (g *Gateway) CancelSession(ctx context.Context, key string) (cancelled []string, known bool, err error) {
	if !g.tree.Live(key) {
		_, known, err = g.Session(ctx, key)
		if err != nil || !known {
			return nil, false, err
		}
	}
	cancelled = g.tree.Cancel(key)
	g.spread(key, true, cancelled)
	return cancelled, true, nil
}

// spread carries a cancel to the other hosts, when there are any.
func (g *Gateway) spread(key string, self bool, cancelled []string) {
	if g.cfg.Cascade != nil {
		g.cfg.Cascade.Spread(key, self, cancelled)
	}
}

// Inflight is what runs now.
type Inflight struct {
	Backends      map[string]BackendLoad `json:"backends"`
	Conversations map[string]int         `json:"conversations"`
	Tree          TreeGauges             `json:"session_tree"`
	// Profiles are each profile's own figures, when several are summed.
	Profiles map[string]Inflight `json:"profiles,omitempty"`
}

// MergeInflight sums what runs in several gateways (every profile, and
// other backends on the listener): loads per backend, conversations by
// profile and key, the tree's gauges; each profile's own figures beside.
func MergeInflight(gws []*Gateway) Inflight {
	if len(gws) == 1 {
		return gws[0].Inflight()
	}
	out := Inflight{Backends: map[string]BackendLoad{}, Conversations: map[string]int{}, Profiles: map[string]Inflight{}}
	for _, gw := range gws {
		in := gw.Inflight()
		out.Profiles[gw.Profile()] = in
		for name, b := range in.Backends {
			out.Backends[name] = addLoad(out.Backends[name], b)
		}
		for key, n := range in.Conversations {
			out.Conversations[gw.Profile()+"/"+key] += n
		}
		out.Tree.Requests += in.Tree.Requests
		out.Tree.Linked += in.Tree.Linked
		out.Tree.Cancelled += in.Tree.Cancelled
	}
	return out
}

func addLoad(sum, b BackendLoad) BackendLoad {
	sum.Running += b.Running
	sum.Queued += b.Queued
	sum.Slots += b.Slots
	sum.Live += b.Live
	sum.Idle += b.Idle
	sum.Spares += b.Spares
	sum.IdleMemory += b.IdleMemory
	sum.Memory += b.Memory
	return sum
}

// BackendLoad is one backend's share of what runs.
type BackendLoad struct {
	Running int `json:"running"` // turns holding a slot
	Queued  int `json:"queued"`  // requests waiting for one
	Slots   int `json:"slots"`
	Live    int `json:"live_processes"` // processes, busy and idle
	Idle    int `json:"idle_processes"`
	Spares  int `json:"spare_processes"` // of the idle, those no conversation has yet
	// IdleMemory is what the idle processes hold (PSS, in bytes), as
	// measured when each became idle.
	IdleMemory int64 `json:"idle_memory_bytes"`
	// Memory is what all live processes hold (PSS, in bytes), measured
	// when asked (Load only).
	Memory int64 `json:"memory_bytes,omitempty"`
}

// TreeGauges are the session tree's live figures.
type TreeGauges struct {
	Requests  int    `json:"live_requests"`
	Linked    int    `json:"linked_requests"`
	Cancelled uint64 `json:"cancelled_total"`
}

// Load is the claude backend's load with the memory of every live
// process measured now (a read of /proc per process).
func (g *Gateway) Load() BackendLoad {
	b := g.Inflight().Backends[g.cfg.CLI.Backend]
	b.Memory = g.pool.Memory()
	return b
}

// SumLoad adds up the loads of several gateways (one per profile), their
// memory measured now.
func SumLoad(gws []*Gateway) BackendLoad {
	var sum BackendLoad
	for _, gw := range gws {
		sum = addLoad(sum, gw.Load())
	}
	return sum
}

// Inflight reports the running and queued requests, per backend and per
// conversation, and the session tree's gauges.
func (g *Gateway) Inflight() Inflight {
	running, queued, slots := g.slots.Stats()
	live, idle := g.pool.Stats()
	gauges, per := g.tree.Stats(g.cfg.Profile)
	spares := 0
	for _, n := range g.pool.Spares() {
		spares += n
	}
	return Inflight{
		Backends: map[string]BackendLoad{g.cfg.CLI.Backend: {Running: running, Queued: queued, Slots: slots, Live: live, Idle: idle, Spares: spares,
			IdleMemory: g.pool.IdleMemory()}},
		Conversations: per,
		Tree:          TreeGauges{Requests: gauges.Requests, Linked: gauges.Linked, Cancelled: gauges.Cancelled},
	}
}
