// Package dispatch decides who answers a model request: the profile it
// names, else the one that last served its conversation, else the
// default; with failover, the next profile that is not benched when one
// refuses for its rate limit before anything reached the client. It also
// owns what makes a retried request safe: the saved answers a retry gets
// instead of a second run, and the journal of requests with explicit ids.
// Every API, and background runs, come through one entry point; dispatch
// knows no transport.
package dispatch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	"github.com/meridian-gw/meridian/internal/answers"
	"github.com/meridian-gw/meridian/internal/anthropic"
	"github.com/meridian-gw/meridian/internal/failover"
	"github.com/meridian-gw/meridian/internal/gateway"
	"github.com/meridian-gw/meridian/internal/journal"
	"github.com/meridian-gw/meridian/internal/store"
)

// Answerer is what dispatch asks of a profile's gateway: its name, the
// conversation's profile and holder, its load, and the answer.
type Answerer interface {
	Profile() string
	Messages(ctx context.Context, req gateway.Request, id string, out gateway.Output) error
	ServedBy(ctx context.Context, req gateway.Request) (string, error)
	HeldBy(ctx context.Context, req gateway.Request) (store.Owner, error)
	Slots() (inUse, waiting, size int)
	// RateWindows are the plan windows its CLI last reported.
	RateWindows() []gateway.RateWindow
}

var _ Answerer = (*gateway.Gateway)(nil)

// Profile is a named profile's gateway.
type Profile struct {
	Name    string
	Gateway *gateway.Gateway
	// Fallback: failover may move requests of other profiles here. The
	// environment's implicit profile may have no login of its own, so it
	// answers only requests that chose it.
	Fallback bool
	// PlanOnly: the profile never draws paid extra usage; with its plan
	// spent it is passed over until the spent window resets.
	PlanOnly bool
	// answerer stands in for Gateway where dispatch is tested alone.
	answerer Answerer
}

// answers is the profile's gateway as dispatch uses it.
func (p Profile) answers() Answerer {
	if p.answerer != nil {
		return p.answerer
	}
	return p.Gateway
}

// Config configures a Dispatcher.
type Config struct {
	// Default answers requests that name no profile; Profiles are every
	// profile in priority order.
	Default  *gateway.Gateway
	Profiles []Profile
	// Failover moves a request refused for a rate limit or overload,
	// before anything reached its client, to the next profile that is
	// not benched.
	Failover bool
	// Accounts is how a request that names no profile is given one
	// (zero: ByHeadroom); MoveAt is how full a plan window may get
	// before a conversation leaves its profile (zero:
	// headroom.DefaultMoveAt).
	Accounts Accounts
	MoveAt   float64
	// Answers keeps completed answers for retries; Journal records the
	// requests with explicit ids while they run. Either may be nil.
	Answers *answers.Cache
	Journal *journal.Journal
	// Bench and Figures share the profiles' benches and plan figures
	// with every host; nil keeps them here alone.
	Bench   store.Bench
	Figures store.Figures
	// Watch, when set, hears each profile's figures after its turns and
	// each bench (package alerts tells the operator).
	Watch Watcher
	// Hosts, when set, lets Route send a conversation's turns to the host
	// that holds it.
	Hosts  Hosts
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// def stands in for Default where dispatch is tested alone.
	def Answerer
}

// Watcher hears what dispatch learns of the profiles. Its calls must not
// wait: they are made on a request's path.
type Watcher interface {
	Figures(profile string, f store.PlanFigures)
	Bench(profile string, until time.Time)
	// Reopened: a bench (until a time) has ended, or was lifted.
	Reopened(profile string, until time.Time)
	// LoggedOut: the upstream refused the profile's credentials.
	LoggedOut(profile string)
}

// Dispatcher chooses the gateway for each request.
type Dispatcher struct {
	cfg   Config
	log   *slog.Logger
	bench failover.Bench // profiles refused for their rate limits, until when
	// others is what every host recorded of the profiles (benches,
	// figures), read at most once per sharedTTL.
	others shared
	// set is the profiles as they stand; SetProfiles replaces it whole,
	// so a request reads one consistent set.
	set atomic.Pointer[profileSet]
}

// profileSet is the profiles at one time: the default, every profile in
// priority order, the gateway of each name, and the profiles failover may
// move requests to, in priority order.
type profileSet struct {
	def       *gateway.Gateway
	answerer  Answerer // def, as dispatch uses it
	list      []Profile
	byName    map[string]Answerer
	fallbacks []string
	planOnly  map[string]bool
}

// New returns a Dispatcher.
func New(cfg Config) *Dispatcher {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	d := &Dispatcher{cfg: cfg, log: cfg.Logger}
	d.SetProfiles(cfg.Default, cfg.Profiles)
	return d
}

// SetProfiles replaces the profiles (a profile added, removed or made the
// default while meridian runs). Requests already running keep the
// gateway they were given.
func (d *Dispatcher) SetProfiles(def *gateway.Gateway, profiles []Profile) {
	set := &profileSet{def: def, answerer: d.cfg.def, list: slices.Clone(profiles), byName: map[string]Answerer{}, planOnly: map[string]bool{}}
	if set.answerer == nil {
		set.answerer = def
	}
	for _, p := range profiles {
		set.byName[p.Name] = p.answers()
		set.planOnly[p.Name] = p.PlanOnly
		if p.Fallback {
			set.fallbacks = append(set.fallbacks, p.Name)
		}
	}
	d.set.Store(set)
}

// Default is the gateway of requests that name no profile.
func (d *Dispatcher) Default() *gateway.Gateway { return d.set.Load().def }

// Profiles lists the profiles in priority order.
func (d *Dispatcher) Profiles() []Profile { return d.set.Load().list }

// Lookup finds a profile by name.
func (d *Dispatcher) Lookup(name string) (*gateway.Gateway, bool) {
	for _, p := range d.set.Load().list {
		if p.Name == name {
			return p.Gateway, true
		}
	}
	return nil, false
}

// Names lists the profiles in priority order.
func (d *Dispatcher) Names() []string {
	list := d.set.Load().list
	names := make([]string, len(list))
	for i, p := range list {
		names[i] = p.Name
	}
	return names
}

// Gateways lists every profile's gateway once, in priority order; the
// default alone when there are no named profiles.
func (d *Dispatcher) Gateways() []*gateway.Gateway {
	set := d.set.Load()
	if len(set.list) == 0 {
		return []*gateway.Gateway{set.def}
	}
	out := make([]*gateway.Gateway, len(set.list))
	for i, p := range set.list {
		out[i] = p.Gateway
	}
	return out
}

// Call is one model request as dispatch sees it.
type Call struct {
	Request gateway.Request
	// ID is the response's id.
	ID string
	// Named is the profile the client chose; nil lets dispatch choose.
	Named *gateway.Gateway
	// Allowed, when set, says which profiles the request may run on (its
	// API key's scope): dispatch chooses, and fails over, among those
	// only.
	Allowed func(profile string) bool
	// Answering, when set, hears each profile that is about to answer
	// (after a failover, the next) and why it was chosen, before it runs.
	Answering func(profile, reason string)
}

// Answer runs a model request on its profile: the one it names; else, by
// headroom, the one with the most room left in its plan windows (a running
// conversation staying on its own while that has room); else (by
// priority) the one that last served its conversation, else the default.
// With failover (implied by headroom), a refusal for a rate limit or
// overload before anything reached the client benches that profile until
// its wait has passed and the request goes to the next profile that is
// not benched; when all are benched the refusal is a 429 with the
// earliest reopening as its wait.
func (d *Dispatcher) Answer(ctx context.Context, c Call, out gateway.Output) error {
	set := d.set.Load()
	p := d.plan(ctx, set, c)
	answering := func(name, reason string) {
		if c.Answering != nil {
			c.Answering(name, reason)
		}
	}
	if len(p.order) == 0 && p.reopen.IsZero() {
		return &gateway.Error{Status: http.StatusForbidden, Type: anthropic.ErrPermission,
			Message: "the API key may use none of the profiles this meridian serves"}
	}
	st, retryable := out.(gateway.Committer)
	reopen := p.reopen
	for i, gw := range p.order {
		name, reason := gw.Profile(), p.reason
		if i > 0 {
			reason = reasonBenched
		}
		answering(name, reason)
		req := c.Request
		req.Route = reason
		err := gw.Messages(ctx, req, c.ID, out)
		d.publish(ctx, name, gw)
		d.heard(name, err)
		if !p.failover {
			return err
		}
		var ge *gateway.Error
		if !errors.As(err, &ge) || (ge.Status != http.StatusTooManyRequests && ge.Status != anthropic.StatusOverloaded) ||
			!retryable || st.Committed() || ctx.Err() != nil {
			return err
		}
		until := d.benchProfile(ctx, name, ge.RetryAfter)
		d.log.Warn("profile refused the request for its rate limit: benched, trying the next profile",
			"profile", name, "status", ge.Status, "benched_until", until)
		if reopen.IsZero() || until.Before(reopen) {
			reopen = until
		}
	}
	wait := reopen.Sub(d.cfg.Now())
	return &gateway.Error{Status: http.StatusTooManyRequests, Type: anthropic.ErrRateLimit, RetryAfter: wait,
		Message: fmt.Sprintf("every profile is rate-limited; the first reopens in %s", wait.Round(time.Second))}
}

// choose is the profile c runs on first.
func (d *Dispatcher) choose(ctx context.Context, c Call) Answerer {
	p := d.plan(ctx, d.set.Load(), c)
	if len(p.order) == 0 {
		return nil
	}
	return p.order[0]
}

// allows reports whether the call may run on a profile.
func (c Call) allows(profile string) bool { return c.Allowed == nil || c.Allowed(profile) }
