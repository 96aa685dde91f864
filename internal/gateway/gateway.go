// Package gateway orchestrates one request: it plans the backend session,
// waits for an admission slot, runs the turn, relays the output and turns
// failures into client errors with a retry wait. It knows no transport.
package gateway

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/meridian-gw/meridian/internal/adapter"
	"github.com/meridian-gw/meridian/internal/admission"
	"github.com/meridian-gw/meridian/internal/anthropic"
	"github.com/meridian-gw/meridian/internal/backend"
	"github.com/meridian-gw/meridian/internal/failover"
	"github.com/meridian-gw/meridian/internal/pool"
	"github.com/meridian-gw/meridian/internal/replay"
	"github.com/meridian-gw/meridian/internal/retryafter"
	"github.com/meridian-gw/meridian/internal/session"
	"github.com/meridian-gw/meridian/internal/sessiontree"
	"github.com/meridian-gw/meridian/internal/telemetry"
	"github.com/meridian-gw/meridian/internal/tracing"
)

// Inspector is what the gateway asks about its backend beyond sessions.
type Inspector interface {
	backend.Inspector
	// Locate finds the backend's binary.
	Locate() (string, error)
}

// Defaults for Config.
const (
	DefaultMaxConcurrent = 10
	DefaultQueueTimeout  = 30 * time.Second
	DefaultTurnWait      = 30 * time.Second
	DefaultProfile       = "default"
)

// Gateway serves model requests through a backend.
type Gateway struct {
	cfg    Config
	log    *slog.Logger
	slots  *admission.Limiter
	window rateWindow
	// windows keeps the last report of each rate-limit window, for
	// /providers.
	windows rateWindows
	health  healthCache
	models  modelCache
	probes  sync.WaitGroup // background backend probes
	// closing ends the probes when the gateway closes.
	closing context.Context
	stop    context.CancelFunc
	pool    *pool.Pool
	tree    *sessiontree.Tree
	// long benches the profile's extended-context variants.
	long failover.LongBench
	// plans reads the plan's limits for /v1/usage/quota.
	plans planCache
}

// New returns a Gateway.
func New(cfg Config) *Gateway {
	if cfg.MaxConcurrent <= 0 {
		cfg.MaxConcurrent = DefaultMaxConcurrent
	}
	if cfg.QueueTimeout <= 0 {
		cfg.QueueTimeout = DefaultQueueTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.CLI.Name == "" {
		cfg.CLI = claudeCLI
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.TurnWait <= 0 {
		cfg.TurnWait = DefaultTurnWait
	}
	if cfg.StallTimeout <= 0 {
		cfg.StallTimeout = DefaultStallTimeout
	}
	if cfg.Profile == "" {
		cfg.Profile = DefaultProfile
	}
	if cfg.MaxLive <= 0 {
		cfg.MaxLive = pool.DefaultMax
	}
	// Every running turn needs a live process; more turns than processes
	// would have to evict active work.
	cfg.MaxConcurrent = min(cfg.MaxConcurrent, cfg.MaxLive)
	closing, stop := context.WithCancel(context.Background())
	slots := admission.New(cfg.MaxConcurrent, cfg.QueueTimeout)
	spares := pool.SpareConfig{Min: cfg.SparesMin, Max: cfg.SparesMax, CPU: cfg.SpareCPU,
		Starts: cfg.Starts, Profile: cfg.Profile, Key: startKey}
	spares.Backend, _ = cfg.Backend.(backend.SpareBackend)
	g := &Gateway{
		closing: closing,
		stop:    stop,
		cfg:     cfg,
		log:     cfg.Logger,
		slots:   slots,
		pool: pool.New(pool.Config{Max: cfg.MaxLive, IdleTTL: cfg.IdleTTL, OneOffTTL: cfg.OneOffTTL,
			Memory: cfg.LiveMemory, FreezeAfter: freezeAfter(cfg.FreezeIdle), Log: cfg.Logger, Spares: spares,
			Load: func() (int, int) { running, waiting, _ := slots.Stats(); return running, waiting }}),
		tree: cfg.Tree,
	}
	if g.tree == nil {
		g.tree = sessiontree.New()
	}
	return g
}

// Profile is the profile this gateway serves.
func (g *Gateway) Profile() string { return g.cfg.Profile }

// NewMessageID returns a fresh id for a response message.
func NewMessageID() string { return "msg_" + rand.Text() }

// Messages answers one Messages API request, reporting the response to out.
// The returned error is an *Error for the client, the context's error when
// the client went away, or nil. If out was started, the caller renders an
// *Error inside the response; otherwise as the whole response.
func (g *Gateway) Messages(ctx context.Context, req Request, id string, out Output) (err error) {
	ctx, span := tracing.Start(ctx, "turn", tracing.Internal, tracing.Attr("meridian.profile", g.cfg.Profile))
	tracing.Request(span, tracing.ProviderName(g.cfg.CLI.Name), req.Body.Model, req.Body.MaxTokens)
	defer func() {
		model, t := telemetry.From(ctx).Usage()
		tracing.Response(span, model, tracing.Usage{Input: t.Input, Output: t.Output, CacheRead: t.CacheRead, CacheWrite: t.CacheWrite}, "")
		tracing.Fail(span, err)
		span.End()
	}()
	opts, perr := g.plan(req.Body)
	if perr != nil {
		return perr
	}
	if err := g.takesMedia(req.Body); err != nil {
		return err
	}
	tools, _ := toolsOf(req.Body)
	opts.Tools, opts.WebSearch = tools.list, g.webSearch(req.Body)
	opts = g.withFormat(opts, req.Body.Format)
	tr := telemetry.From(ctx)
	tr.Request(req.Body.Model, req.Body.Stream)
	ident := g.identify(req)
	if g.cfg.Sessions == nil {
		tr.Conversation(adapter.Detect(req.Header, req.Body).Name(), g.cfg.Profile, "")
	} else {
		tr.Conversation(ident.Client, g.cfg.Profile, ident.Key)
	}
	if err := g.resolveListed(ctx, &opts); err != nil {
		return err
	}
	if failover.IsLong(req.Body.Model) && g.long.Benched(ident.Key, g.cfg.Now()) {
		req, opts = standardContext(req, opts)
	}
	err = g.messages(ctx, req, ident, opts, tools, id, out)
	var ge *Error
	if !errors.As(err, &ge) || committed(out) || ctx.Err() != nil {
		return err
	}
	refusal := failover.Classify(req.Body.Model, ge.Status, ge.Message, ge.Code)
	if refusal == failover.NotLong {
		return err
	}
	wide, until := g.long.Put(refusal, ident.Key, g.cfg.Now(), ge.RetryAfter)
	g.log.WarnContext(ctx, "the extended-context model was refused: retrying on the standard model", "model", req.Body.Model,
		"why", ge.Message, "profile_wide", wide, "conversation", ident.Key, "until", until)
	req, opts = standardContext(req, opts)
	return g.messages(ctx, req, ident, opts, tools, id, out)
}

// resolveListed makes the model of a request to a backend that takes only
// the models it lists into one of those (a model refused gets 400 naming
// them). When the list cannot be read the backend decides.
func (g *Gateway) resolveListed(ctx context.Context, opts *backend.StartOptions) error {
	r, ok := g.cfg.Backend.(backend.ModelResolver)
	if !ok || opts.Model == "" {
		return nil
	}
	models, err := g.Models(ctx)
	if err != nil || len(models) == 0 {
		return nil
	}
	model, err := r.ResolveModel(opts.Model, *opts, models)
	if err != nil {
		e := InvalidRequest(err.Error())
		e.Param = "model"
		return e
	}
	opts.Model = model
	return nil
}

// identify names the conversation req belongs to; the zero Identity when
// conversations are not kept.
func (g *Gateway) identify(req Request) adapter.Identity {
	switch {
	case g.cfg.Sessions == nil:
		return adapter.Identity{}
	case req.conversation != nil:
		return *req.conversation
	}
	return identityOf(req)
}

// ServedBy names the profile that last answered the conversation req
// belongs to ("" for none, or when conversations are not kept): a
// conversation stays with it.
func (g *Gateway) ServedBy(ctx context.Context, req Request) (string, error) {
	ident := g.identify(req)
	if ident.Key == "" {
		return "", nil
	}
	m, err := req.stored.latest(ctx, g.cfg.Sessions, ident.Key)
	return m.Profile, err
}

// Transcripts copies a conversation's CLI transcript to the store after
// each published turn (in the background) and writes it back where this
// host's CLI reads it (package transcripts).
type Transcripts interface {
	Save(key, sessionID, cwd string)
	Restore(ctx context.Context, key, sessionID, cwd string) (bool, error)
	// Close waits for the copies under way.
	Close()
}

// HeldBy names the process that published the last turn of the
// conversation req belongs to: the zero Owner for a new conversation, a
// one-off, or when conversations are not kept.
func (g *Gateway) HeldBy(ctx context.Context, req Request) (session.Owner, error) {
	ident := g.identify(req)
	if ident.Key == "" {
		return session.Owner{}, nil
	}
	m, err := req.stored.under(ctx, g.cfg.Sessions, g.cfg.Profile, ident.Key)
	if err != nil {
		return session.Owner{}, err
	}
	return m.Holder, nil
}

// messages runs a request of the conversation ident names, or a one-off
// when it names none.
func (g *Gateway) messages(ctx context.Context, req Request, ident adapter.Identity, opts backend.StartOptions, tools *clientTools, id string, out Output) error {
	if ident.Key == "" {
		return g.oneShot(ctx, req.Body, opts, tools, id, out)
	}
	ctx, out, leave := g.enterTree(ctx, ident, out)
	defer leave()
	return treeError(ctx, g.converse(ctx, req, ident, opts, tools, id, out))
}

// standardContext is req asking for the standard-context model of its
// extended-context variant. The body is copied: the caller's stays as sent.
func standardContext(req Request, opts backend.StartOptions) (Request, backend.StartOptions) {
	body := *req.Body
	body.Model = failover.Standard(body.Model)
	req.Body = &body
	opts.Model = ResolveModel(body.Model)
	return req, opts
}

// Committer is an Output that can tell whether anything reached the
// client yet: until then a refused request may be tried again.
type Committer interface{ Committed() bool }

// committed reports whether out has sent anything; an Output that cannot
// tell is taken to have.
func committed(out Output) bool {
	c, ok := out.(Committer)
	return !ok || c.Committed()
}

// oneShot serves a request that belongs to no known conversation: a fresh
// process gets the whole conversation and is closed after the turn.
func (g *Gateway) oneShot(ctx context.Context, req *anthropic.MessagesRequest, opts backend.StartOptions, tools *clientTools, id string, out Output) error {
	release, err := g.admit(ctx)
	if err != nil {
		return err
	}
	defer release()

	began := g.cfg.Now()
	sess, err := g.cfg.Backend.Start(ctx, opts)
	if err != nil {
		return g.startError(ctx, err)
	}
	// Close joins the process; it runs before the slot is released.
	defer sess.Close()
	nameSession(out, sess.ID())

	r := newRelay(out, Start{ID: id, Model: req.Model}, req, sess.ID)
	if opts.JSONSchema != nil {
		r.format = req.Format
	}
	r.tools, r.answer = tools, sess.Answer
	tr := telemetry.From(ctx)
	res, err := g.turn(ctx, sess, backend.Input{Content: replay.Render(req.Messages)}, g.emitter(tr, r))
	switch {
	case err == nil && res.Paused:
		// Nobody can continue this turn (the request has no identity): the
		// client's results will come with a request that replays it all.
		g.log.InfoContext(ctx, "turn handed client tool calls", "session", sess.ID(), "calls", len(r.calls))
		tr.Answered(r.start.Model, tokensOf(r.usage))
		return r.finishPaused(res)
	case errors.Is(err, errEnough):
		err = r.finishEarly()
		g.log.InfoContext(ctx, "turn cut short", "session", sess.ID(), "stop_sequence", r.stopAt, "took", g.cfg.Now().Sub(began))
		return err
	case err != nil:
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return err // the output refused a write: the client is gone
	case res.Failure != nil:
		e := g.failed(ctx, r, res.Failure)
		g.log.WarnContext(ctx, "turn failed", "session", res.SessionID, "status", e.Status, "type", e.Type,
			"retry_after", e.RetryAfter, "wait_source", e.WaitSource, "error", res.Failure.Message)
		return e
	}
	tr.Answered(r.start.Model, tokensOf(usageOf(res.Usage)))
	attrs := []any{"session", res.SessionID, "model", r.start.Model, "stop", res.StopReason, "took", g.cfg.Now().Sub(began),
		"input_tokens", res.Usage.InputTokens, "output_tokens", res.Usage.OutputTokens,
		"cache_read", res.Usage.CacheReadInputTokens, "cache_write", res.Usage.CacheCreationInputTokens}
	if len(res.NativeWork) > 0 {
		attrs = append(attrs, "native_work", strings.Join(res.NativeWork, "; "))
	}
	g.log.InfoContext(ctx, "turn done", attrs...)
	return r.finish(res)
}

func (g *Gateway) admit(ctx context.Context) (func(), error) {
	began := g.cfg.Now()
	release, err := g.slots.Acquire(ctx)
	telemetry.From(ctx).Queued(g.cfg.Now().Sub(began))
	if err == nil {
		g.pool.TurnsChanged()
		return func() { release(); g.pool.TurnsChanged() }, nil
	}
	if errors.Is(err, admission.ErrTimeout) {
		_, waiting, size := g.slots.Stats()
		return nil, newError(anthropic.StatusOverloaded, anthropic.ErrOverloaded, fmt.Sprintf(
			"all %d %s process slots stayed busy for %s (%d more requests waiting); retry later or raise --max-concurrent",
			size, g.cfg.CLI.Name, g.cfg.QueueTimeout, waiting), factsNow(g))
	}
	return nil, err
}

func (g *Gateway) startError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var f *backend.Failure
	if errors.As(err, &f) { // the backend refused the start as an upstream would
		return classify(f, g.cfg.CLI, g.window.get(g.cfg.Now()), g.cfg.Now())
	}
	var waiting interface{ RetryAfter() time.Duration }
	if errors.Is(err, backend.ErrUnavailable) || errors.As(err, &waiting) {
		facts := factsNow(g)
		if waiting != nil {
			facts.UpstreamDelay = waiting.RetryAfter() // until the backend is checked again
		}
		return newError(http.StatusServiceUnavailable, anthropic.ErrAPI, err.Error(), facts)
	}
	g.log.ErrorContext(ctx, "backend start failed", "err", err)
	return &Error{Status: http.StatusInternalServerError, Type: anthropic.ErrAPI, Message: "could not start the " + g.cfg.CLI.Name + " CLI: " + redact(err.Error())}
}

// observe records what turn events say about the account.
func (g *Gateway) observe(ev *backend.Event) {
	switch ev.Kind {
	case backend.RateLimit:
		g.window.observe(ev.ResetsAt)
		g.windows.observe(ev, g.cfg.Now())
		switch {
		case ev.Overage:
			g.log.Warn("the upstream served this turn from the account's paid extra usage: its plan's window is spent",
				"window", ev.LimitType, "resets_at", ev.ResetsAt)
		case ev.LimitStatus != "allowed":
			g.log.Info("rate limit window", "status", ev.LimitStatus, "resets_at", ev.ResetsAt)
		}
	case backend.Retry:
		g.log.Info("upstream call will be retried", "status", ev.Status, "delay", ev.RetryDelay)
	}
}

// factsNow is a refusal about which nothing but the time is known.
func factsNow(g *Gateway) retryafter.Facts { return retryafter.Facts{Now: g.cfg.Now()} }

// Slots reports admission: processes running, requests waiting, the bound.
func (g *Gateway) Slots() (inUse, waiting, size int) { return g.slots.Stats() }

// rateWindow remembers the account's last observed rate-limit reset.
type rateWindow struct {
	mu    sync.Mutex
	reset time.Time
}

func (w *rateWindow) observe(t time.Time) {
	if t.IsZero() {
		return
	}
	w.mu.Lock()
	w.reset = t
	w.mu.Unlock()
}

func (w *rateWindow) get(now time.Time) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.reset.After(now) {
		return w.reset
	}
	return time.Time{}
}
