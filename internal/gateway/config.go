package gateway

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/meridian-gw/meridian/internal/adapter"
	"github.com/meridian-gw/meridian/internal/anthropic"
	"github.com/meridian-gw/meridian/internal/backend"
	"github.com/meridian-gw/meridian/internal/pool"
	"github.com/meridian-gw/meridian/internal/session"
	"github.com/meridian-gw/meridian/internal/sessiontree"
)

// Config configures a Gateway.
type Config struct {
	Backend   backend.Backend
	Inspector Inspector
	// CLI names the backend's program (default: claude).
	CLI CLI
	// Workspace is the working directory backend processes run in.
	Workspace string
	// Transcripts shares the CLI's transcripts with the other hosts, so a
	// conversation made elsewhere resumes here from what its CLI wrote;
	// nil keeps them here.
	Transcripts Transcripts
	// Tree is the session tree every gateway of the process shares (a
	// subagent may run under another profile than its lead); nil: one of
	// its own. Cascade carries its cancels to the other hosts; nil: they
	// stay here.
	Tree    *sessiontree.Tree
	Cascade Cascade
	// MaxConcurrent bounds turns running at once.
	MaxConcurrent int
	// QueueTimeout bounds how long a request waits for a slot.
	QueueTimeout time.Duration

	// Sessions and Leases make conversations durable; without them every
	// request is served on its own.
	Sessions *session.Store
	Leases   *session.Leases
	// Profile scopes conversation keys (one account's sessions).
	Profile string
	// TurnWait bounds how long a turn waits for its conversation's
	// previous turn before a 409.
	TurnWait time.Duration
	// MaxLive bounds live claude processes (idle and in use); IdleTTL closes
	// idle ones. With NoLive no process outlives its turn: conversations
	// continue by resuming their stored session, which costs a process
	// start per turn but holds no memory between turns.
	MaxLive int
	IdleTTL time.Duration
	NoLive  bool
	// StallTimeout ends a turn whose backend produced nothing for that
	// long (0: DefaultStallTimeout).
	StallTimeout time.Duration
	// LiveMemory bounds the memory idle live processes hold, in bytes (0:
	// no bound); OneOffTTL keeps a one-off conversation's process (0:
	// pool.DefaultOneOffTTL).
	LiveMemory int64
	OneOffTTL  time.Duration
	// SparesMin processes wait, started ahead of need, for the start-time
	// contract recent new conversations used most; more wait after bursts
	// of new conversations, as many as ran at once, SparesMax in all (0:
	// no spares).
	SparesMin, SparesMax int
	// SpareCPU is the share of one core the starts of spares beyond
	// SparesMin may use, spread over time (each start's measured cost sets
	// the wait before the next); 0: no limit, a burst's spares come back
	// within seconds.
	SpareCPU float64
	// Starts, when set, remembers the start-time options of new
	// conversations across restarts: at start the first spare is made for
	// the ones used most.
	Starts pool.StartLog
	// FreezeIdle stops idle processes after pool.DefaultFreezeAfter.
	FreezeIdle bool

	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Request is one request as the gateway sees it: the decoded body and the
// headers that identify the client and its conversation.
type Request struct {
	Body   *anthropic.MessagesRequest
	Header http.Header
	// Hints are identity signals from a body in another protocol (an
	// OpenAI request's metadata, prompt_cache_key, user).
	Hints adapter.Hints
	// Caller names the API key the request came with ("" for the admin
	// key or an open gateway): the conversations of different keys are
	// never one, whatever their clients send.
	Caller string
	// Echo, when set, turns an answer into the form in which the client
	// will send it back as history, which is what lineage records. Nil
	// means as answered: Anthropic clients echo the blocks they received.
	Echo func(anthropic.Message) anthropic.Message
	// Route is why dispatch gave the request this profile ("headroom
	// five_hour 31%", "sticky", …), for the turn's log line.
	Route string

	// conversation, once Identified has named it, is the conversation
	// the request belongs to, shared by the copies the routing, the
	// profile's choice and the answer each take: its digests are
	// computed once.
	conversation *adapter.Identity
	// stored is the conversation's row as the first step that asked read
	// it, for the later ones: which profile and host hold it, and what
	// its session held before this request took its turn lease.
	stored *stored
}

// stored is a conversation's latest row, read once per request.
type stored struct {
	once sync.Once
	m    session.Mapping
	err  error
}

// latest is the row of conversation key under the profile that last
// answered it: read once for the request, or at each call for a request
// not Identified (s nil).
func (s *stored) latest(ctx context.Context, sessions *session.Store, key string) (session.Mapping, error) {
	if s == nil {
		return sessions.Latest(ctx, key)
	}
	s.once.Do(func() { s.m, s.err = sessions.Latest(ctx, key) })
	return s.m, s.err
}

// under is the conversation's mapping under profile: the latest row when
// it is that profile's (or no profile has one), else read now.
func (s *stored) under(ctx context.Context, sessions *session.Store, profile, key string) (session.Mapping, error) {
	m, err := s.latest(ctx, sessions, key)
	switch {
	case err != nil:
		return m, err
	case m.Profile == profile:
		return m, nil
	case m.Profile == "":
		return session.Mapping{Profile: profile, Key: key}, nil
	}
	return sessions.Load(ctx, profile, key)
}

// Identified is req naming its conversation once for every step that
// asks which it is, and reading its row once for every step that asks
// where it stands.
func (req Request) Identified() Request {
	id := identityOf(req)
	req.conversation, req.stored = &id, &stored{}
	return req
}

func identityOf(req Request) adapter.Identity {
	return adapter.Detect(req.Header, req.Body).Identify(req.Header, req.Body).WithHints(req.Hints, req.Body).Of(req.Caller).Bounded()
}

// Cascade carries the session tree's cancels to the other hosts sharing
// the store (package cluster).
type Cascade interface {
	// Spread tells every other host to cancel the requests below
	// conversation key (and, with self, key's own), and below each of the
	// conversations this host has cancelled with it.
	Spread(key string, self bool, cancelled []string)
}

// CLI names the backend's program where clients and logs read about it.
type CLI struct {
	Name    string // "claude", "agy"
	Backend string // the backend it is: "claude", "antigravity"
	// LoginHint says what to do when it is not logged in.
	LoginHint string
	// PlanSource and WindowSource say where the quota's plan limits and
	// rate-limit windows come from ("" when the CLI reports none).
	PlanSource, WindowSource string
}

// The claude CLI, the default.
var claudeCLI = CLI{Name: "claude", Backend: "claude", LoginHint: "run `claude login` or check `claude auth status` (or set ANTHROPIC_API_KEY)",
	PlanSource: "get_usage", WindowSource: "rate_limit_event"}

// CLI is the CLI this gateway drives.
func (g *Gateway) CLI() CLI { return g.cfg.CLI }

func freezeAfter(freeze bool) time.Duration {
	if freeze {
		return pool.DefaultFreezeAfter
	}
	return -1
}

// Spare sizing, for the flags' defaults.
const (
	// DefaultSparesMin is how many spare processes wait by default when no
	// burst asks for more.
	DefaultSparesMin = 1
	// SpareMemory is what a waiting spare holds (pool.SpareMemory).
	SpareMemory = pool.SpareMemory
)
