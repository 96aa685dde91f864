package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/meridian-gw/meridian/internal/adapter"
	"github.com/meridian-gw/meridian/internal/anthropic"
	"github.com/meridian-gw/meridian/internal/backend"
	"github.com/meridian-gw/meridian/internal/lineage"
	"github.com/meridian-gw/meridian/internal/pool"
	"github.com/meridian-gw/meridian/internal/session"
	"github.com/meridian-gw/meridian/internal/telemetry"
)

// publishTimeout bounds the store write after a turn; it runs even when the
// client has already gone.
const publishTimeout = 10 * time.Second

// turn is one conversation turn in flight.
type turn struct {
	g       *Gateway
	req     *anthropic.MessagesRequest
	echo    func(anthropic.Message) anthropic.Message
	ident   adapter.Identity
	opts    backend.StartOptions
	tools   *clientTools
	mapping session.Mapping
	in      []lineage.Digest
	tail    []lineage.Digest
	verdict lineage.Verdict
	// pending are the tool calls the session's paused turn waits for, when
	// the verdict continues there.
	pending []string
	live    *pool.Live
	reused  bool
	// lost is closed when the turn's lease was taken over; nil for a new
	// conversation, which holds none.
	lost <-chan struct{}
	// lease is the turn's lease, whose token fences its publish; nil
	// without one.
	lease *session.Lease
	// delivered are the tool results this turn hands to the CLI.
	delivered []string
	// transient recognises the client's per-turn blocks, which lineage
	// does not count (nil: the client has none).
	transient adapter.Transient
	// replayed: the session that holds the conversation could not be
	// resumed here (made on another host, its transcript not shared), so
	// its whole history was replayed.
	replayed bool
	// route is why dispatch chose this profile, for the log.
	route string
}

// converse serves a request that belongs to a conversation: it takes the
// conversation's turn lease, decides from the lineage what the CLI session
// already holds, continues on the live process when it stands exactly
// there, otherwise resumes the stored session (or starts fresh), and after
// a turn that completed publishes what the session now holds.
func (g *Gateway) converse(ctx context.Context, greq Request, ident adapter.Identity, opts backend.StartOptions, tools *clientTools, id string, out Output) error {
	req := greq.Body
	t := &turn{g: g, req: req, echo: greq.Echo, ident: ident, opts: opts, tools: tools, route: greq.Route}
	// Lineage compares what is durable of the client's messages: its
	// per-turn blocks (OpenCode's hook envelopes) would make every turn
	// an edit. They still reach the CLI.
	t.transient = adapter.TransientOf(adapter.ByName(ident.Client))
	view := adapter.Durable(t.transient, req.Messages)
	t.in = lineage.Digests(view)
	t.tail = lineage.BlockDigests(view[len(view)-1])
	// Whether the turn waits for the conversation's lease is decided on
	// the row the request read already; under the lease it is read again
	// only if another turn moved the conversation on meanwhile.
	if err := t.classify(ctx, func(ctx context.Context) (session.Mapping, error) {
		return greq.stored.under(ctx, g.cfg.Sessions, g.cfg.Profile, ident.Key)
	}); err != nil {
		return err
	}
	// A request the client named (a session header, a conversation id)
	// belongs to that conversation from its first turn: its turns take
	// the lease one at a time, or a herd of first turns would each run
	// and all but one answer's history be lost. A request known only by
	// its content that continues nothing stored waits for no other turn:
	// identical stateless requests run side by side, each its own, and
	// the first to finish keeps the mapping.
	if t.verdict.Kind != lineage.Diverged || !ident.Fingerprint {
		lease, err := g.cfg.Leases.Acquire(ctx, g.cfg.Profile, ident.Key, g.cfg.TurnWait)
		var busy *session.BusyError
		switch {
		case errors.As(err, &busy) && busy.Crowded:
			return &Error{Status: http.StatusTooManyRequests, Type: anthropic.ErrRateLimit, RetryAfter: busy.RetryAfter, Message: fmt.Sprintf(
				"too many turns of conversation %q are waiting for the one running; retry later", ident.Key)}
		case errors.As(err, &busy):
			return &Error{Status: http.StatusConflict, Type: "conflict_error", RetryAfter: busy.RetryAfter, Message: fmt.Sprintf(
				"another turn of conversation %q is still running (waited %s); retry when it has finished", ident.Key, g.cfg.TurnWait)}
		case err != nil:
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return g.storeFailure("take the conversation's turn lease", err)
		}
		defer lease.Release()
		// A turn whose lease is taken over stops spending and publishes
		// nothing: another turn of the conversation runs now.
		var stop context.CancelCauseFunc
		ctx, stop = context.WithCancelCause(ctx)
		var watch sync.WaitGroup
		watch.Go(func() {
			select {
			case <-lease.Lost():
				stop(errLeaseLost)
			case <-ctx.Done():
			}
		})
		defer watch.Wait()
		defer stop(nil)
		t.lost, t.lease = lease.Lost(), lease
		// The lease says the version it was taken at. A row absent then
		// is read again all the same: a conversation's first publish can
		// commit unseen by the claim that waited for it.
		if v := lease.Version(); v == 0 || v != t.mapping.Version {
			if err := t.classify(ctx, t.load); err != nil {
				return err
			}
		}
	}
	if err := t.refuseRepeats(ctx); err != nil {
		return err
	}
	if t.verdict.Kind == lineage.Diverged && t.pending == nil {
		// A first turn (or one starting over): how many run at once is
		// the demand spares follow.
		defer g.pool.Arrive(t.opts)()
	}

	release, err := g.admit(ctx)
	if err != nil {
		return err
	}
	defer release()

	err = t.run(ctx, id, out)
	switch {
	case errors.Is(err, errStaleSession):
		// The stored session is gone from the CLI's disk: start over with
		// the whole conversation.
		g.log.WarnContext(ctx, "stored "+g.cfg.CLI.Name+" session could not be resumed; replaying the conversation", "conversation", ident.Key, "session", t.mapping.SessionID)
		t.verdict, t.pending, t.replayed = lineage.Verdict{Kind: lineage.Diverged}, nil, true
		err = t.run(ctx, id, out)
	case errors.Is(err, errLiveDied):
		// The live process died before it answered: resume the stored
		// session in a new one.
		g.log.WarnContext(ctx, "live "+g.cfg.CLI.Name+" process died before answering; resuming its conversation", "conversation", ident.Key)
		err = t.run(ctx, id, out)
	}
	return err
}

// errLeaseLost ends a turn whose lease another holder took.
var errLeaseLost = errors.New("gateway: the turn lease was taken over")

// label is how logs, telemetry and pages name the turn's verdict: a
// conversation's first turn is "new" (nothing was held to diverge from),
// one whose history had to be sent again is "replayed", the rest take
// lineage's name.
func (t *turn) label() string {
	switch {
	case t.replayed:
		return "replayed"
	case t.verdict.Kind == lineage.Diverged && len(t.mapping.State.Messages) == 0:
		return "new"
	}
	return t.verdict.Kind.String()
}

func (t *turn) leaseLost() bool {
	if t.lost == nil {
		return false
	}
	select {
	case <-t.lost:
		return true
	default:
		return false
	}
}

// load reads the conversation's mapping from the store.
func (t *turn) load(ctx context.Context) (session.Mapping, error) {
	return t.g.cfg.Sessions.Load(ctx, t.g.cfg.Profile, t.ident.Key)
}

// classify takes what the conversation's session is known to hold and
// decides how the request relates to it.
func (t *turn) classify(ctx context.Context, load func(context.Context) (session.Mapping, error)) error {
	g := t.g
	m, err := load(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return g.storeFailure("load the conversation", err)
	}
	t.mapping = m
	t.verdict = lineage.Classify(m.State, t.in, t.tail)
	if _, endOnly := g.cfg.Backend.(backend.EndOnly); endOnly && t.verdict.Kind != lineage.Diverged &&
		(!t.verdict.AtEnd || t.verdict.Kind == lineage.Compaction) {
		// Going back needs a session cut at an earlier message, which this
		// backend cannot make; and continuing a compacted history would
		// keep everything the client compacted away in its context. Either
		// way the conversation starts over with the history as sent.
		t.verdict = lineage.Verdict{Kind: lineage.Diverged}
	}
	t.pending, _ = pendingCalls(t.verdict.Pin)
	return nil
}

// errStaleSession reports a resume the CLI refused before any output;
// errLiveDied a live process that died before any output.
var (
	errStaleSession = errors.New("gateway: stored session cannot be resumed")
	errLiveDied     = errors.New("gateway: live process died")
)

func (t *turn) run(ctx context.Context, id string, out Output) error {
	g := t.g
	sess, err := t.obtain(ctx)
	if err != nil {
		return err
	}
	nameSession(out, sess.ID())
	in, perr := t.input()
	if perr != nil {
		g.pool.Return(t.live, pool.Keep) // untouched: the paused turn still waits
		return perr
	}
	began := g.cfg.Now()
	r := newRelay(out, Start{ID: id, Model: t.req.Model}, t.req, sess.ID)
	if t.opts.JSONSchema != nil {
		r.format = t.req.Format
	}
	r.tools, r.answer = t.tools, sess.Answer
	if len(in.Results) > 0 {
		r.reported = usageOf(t.live.Reported) // the paused turn's earlier responses
	}
	verdict := t.label()
	tr := telemetry.From(ctx)
	tr.Verdict(verdict, t.reused)
	res, err := g.turn(ctx, sess, in, g.emitter(tr, r))
	logAttrs := []any{"conversation", t.ident.Key, "client", t.ident.Client, "verdict", verdict,
		"live", t.reused, "session", sess.ID(), "model", r.start.Model, "took", g.cfg.Now().Sub(began)}
	if t.route != "" {
		logAttrs = append(logAttrs, "route", t.route)
	}
	if p, ok := sess.(backend.Processor); ok {
		logAttrs = append(logAttrs, "pid", p.Pid())
	}
	switch {
	case err == nil && res.Paused:
		g.log.InfoContext(ctx, "turn handed client tool calls", append(logAttrs, "calls", len(r.calls))...)
		// Published before the response ends: a client that sends its
		// results the moment it has the calls must find them recorded.
		r.closeMessageUsage()
		tr.Answered(r.start.Model, tokensOf(r.usage))
		t.live.Reported = backendUsage(plus(r.reported, r.usage))
		r.unsaved = t.publish(ctx, sess, res, &r.reply, pendingPin(r.calls))
		return r.finishPaused(res)
	case errors.Is(err, errEnough):
		// The client got less than the session holds: the process cannot
		// be kept, and its answer is not published; the next turn resumes
		// from the last published state (or where the CLI took this
		// turn's tool results, which hold records).
		g.pool.Return(t.live, pool.Broken)
		t.hold(ctx, sess, in)
		g.log.InfoContext(ctx, "turn cut short", append(logAttrs, "stop_sequence", r.stopAt)...)
		return r.finishEarly()
	case err != nil:
		g.pool.Return(t.live, pool.Broken)
		if errors.Is(context.Cause(ctx), errLeaseLost) {
			return &Error{Status: http.StatusConflict, Type: "conflict_error", RetryAfter: time.Second, Message: fmt.Sprintf(
				"this turn of conversation %q stalled past its lease and another turn took over; send the request again", t.ident.Key)}
		}
		t.hold(ctx, sess, in)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	case res.Failure != nil:
		g.pool.Return(t.live, pool.Broken)
		if !r.started && t.reused && res.Failure.Kind == backend.FailBackend {
			return errLiveDied
		}
		if t.verdict.Kind != lineage.Diverged && !r.started && staleSession(res.Failure) {
			return errStaleSession
		}
		t.hold(ctx, sess, in)
		e := g.failed(ctx, r, res.Failure)
		g.log.WarnContext(ctx, "turn failed", append(logAttrs, "status", e.Status, "type", e.Type,
			"retry_after", e.RetryAfter, "wait_source", e.WaitSource, "error", res.Failure.Message)...)
		return e
	}
	if err := r.structured(res); err != nil {
		// The session holds an answer the client does not get: it is not
		// kept, and the conversation stays where it was.
		g.pool.Return(t.live, pool.Broken)
		g.log.WarnContext(ctx, "turn failed", append(logAttrs, "error", err.Error())...)
		return err
	}
	if len(res.NativeWork) > 0 {
		logAttrs = append(logAttrs, "native_work", strings.Join(res.NativeWork, "; "))
	}
	g.log.InfoContext(ctx, "turn done", append(logAttrs, "stop", res.StopReason, "input_bytes", res.InputBytes,
		"input_tokens", res.Usage.InputTokens, "output_tokens", res.Usage.OutputTokens,
		"cache_read", res.Usage.CacheReadInputTokens, "cache_write", res.Usage.CacheCreationInputTokens)...)
	tr.Answered(r.start.Model, tokensOf(usageOf(res.Usage)))
	t.live.Reported = backend.Usage{}
	r.unsaved = t.publish(ctx, sess, res, &r.reply, res.Pin) // before the last byte, as above
	return r.finish(res)
}

// obtain returns the session for a turn, from the pool: the
// conversation's live process when it stands exactly where the request
// continues, runs under the same contract and offers the request's tools
// (or can be given the added ones); for a new conversation a recycled
// one-off or a spare; otherwise a new process (start).
func (t *turn) obtain(ctx context.Context) (backend.Session, error) {
	g := t.g
	contract, tools := contractKey(t.opts), toolDigests(t.opts.Tools)
	fresh := t.pending == nil && t.verdict.Kind == lineage.Diverged
	l, from, err := g.pool.Obtain(ctx, pool.Want{
		Key: t.ident.Key, Contract: contract, Tools: tools, Options: t.opts,
		New: fresh, OneOff: fresh && t.ident.Fingerprint && t.mapping.Version == 0,
		Fits: func(live *pool.Live) bool {
			v := t.verdict
			return v.AtEnd && live.Version == t.mapping.Version && live.Pin == v.Pin && live.Contract == contract &&
				(t.pending == nil || onlyUser(t.req.Messages[v.From:])) && t.adoptTools(ctx, live, tools, t.opts.Tools)
		},
		Start: func(ctx context.Context) (backend.Session, backend.StartOptions, error) { return t.start(ctx) },
	})
	switch {
	case errors.Is(err, pool.ErrFull):
		return nil, newError(anthropic.StatusOverloaded, anthropic.ErrOverloaded,
			"every live "+g.cfg.CLI.Name+" process is in use; retry later or raise --max-live", factsNow(g))
	case err != nil:
		return nil, g.startError(ctx, err)
	}
	t.live, t.reused = l, from == pool.Kept
	return l.Session, nil
}

// start starts a new process for the turn: resumed at the verdict's pin
// where this host has the session (its folder, or the transcript the
// store shares), otherwise fresh with the conversation's whole history.
func (t *turn) start(ctx context.Context) (backend.Session, backend.StartOptions, error) {
	g := t.g
	m := t.mapping
	if t.pending != nil {
		// The paused turn is gone with its process (or cannot take this
		// request): the calls and their results reach a resumed or fresh
		// session as history instead.
		t.pending = nil
		t.verdict = lineage.Classify(withoutPendingEnd(m.State), t.in, t.tail)
		t.replayed = t.verdict.Kind == lineage.Diverged
	}
	if t.verdict.Kind != lineage.Diverged && g.pool.Rewound(t.ident.Key, m.SessionID) {
		// A new one-off took its process and rewound the session past
		// it: the CLI would refuse to resume there.
		g.log.InfoContext(ctx, "the conversation's "+g.cfg.CLI.Name+" session served another conversation since; replaying it", "conversation", t.ident.Key)
		t.verdict, t.replayed = lineage.Verdict{Kind: lineage.Diverged}, true
	}
	opts := t.opts
	if t.verdict.Kind != lineage.Diverged {
		if dir, ok := t.resumeDir(ctx); ok {
			opts.Resume, opts.ResumeAt = m.SessionID, t.verdict.Pin
			if dir != "" {
				opts.Dir = dir
			}
		} else {
			// Another host made the session: its working directory, and
			// the transcript the CLI keeps under it, are not here. The
			// conversation starts over with its whole history.
			g.log.InfoContext(ctx, "the conversation's "+g.cfg.CLI.Name+" session was made on another host; replaying it here", "conversation", t.ident.Key)
			t.verdict, t.replayed = lineage.Verdict{Kind: lineage.Diverged}, true
		}
	}
	sess, err := g.cfg.Backend.Start(ctx, opts)
	if err != nil {
		return nil, opts, err
	}
	t.opts.Dir = opts.Dir
	return sess, opts, nil
}

// resumeDir is where the CLI finds the conversation's session, which it
// looks up by working directory: the folder it ran in, or, made on
// another host, the folder its shared transcript is written to here. ""
// with ok: the request's own folder. Not ok: nothing of it is here.
func (t *turn) resumeDir(ctx context.Context) (string, bool) {
	g := t.g
	m := t.mapping
	dir := m.Cwd
	absent := dir != "" && !dirExists(dir)
	if g.cfg.Transcripts != nil {
		here := dir
		if here == "" || absent || m.Holder.Host != g.cfg.Sessions.Self().Host {
			here = t.opts.Dir // another host's folder is not this host's to run in
		}
		restored, err := g.cfg.Transcripts.Restore(ctx, t.ident.Key, m.SessionID, here)
		if err != nil {
			g.log.WarnContext(ctx, "could not write the conversation's shared transcript here; replaying it", "conversation", t.ident.Key, "err", err)
		}
		switch {
		case restored:
			return here, true
		case m.Holder != g.cfg.Sessions.Self():
			// Nothing of the session is here and the store has no copy:
			// a resume could only fail.
			return "", false
		}
	}
	return dir, !absent
}

// publish records what the session holds after a completed turn, as a
// compare-and-swap on the version the turn started from, and keeps the
// process live. If publishing fails the process is closed: nothing may
// claim a state the store does not know. It returns why the turn's state
// was not saved, "" when it was: the client is told, since its next turn
// then resumes from the last saved state or replays.
func (t *turn) publish(ctx context.Context, sess backend.Session, res *backend.Result, r *reply, pin string) string {
	g := t.g
	if t.leaseLost() {
		g.log.WarnContext(ctx, "the turn's lease was taken over: nothing is published and its process is closed", "conversation", t.ident.Key)
		g.pool.Return(t.live, pool.Broken)
		return "another turn of the conversation took over"
	}
	reply := r.message()
	if t.echo != nil {
		reply = t.echo(reply)
	}
	state := lineage.Append(lineage.Advance(t.mapping.State, t.verdict, t.in),
		lineage.MessageDigest(reply), pin, lineage.BlockDigests(reply))
	next := t.mapping
	next.Client, next.SessionID, next.State = t.ident.Client, sess.ID(), state
	next.Cwd, next.ClientCwd, next.Model = t.opts.Dir, t.ident.Cwd, t.req.Model
	next.LastInputBytes = res.InputBytes
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), publishTimeout)
	defer cancel()
	if pin == "" {
		g.log.WarnContext(ctx, "the CLI named no message to resume at: nothing is published and its process is closed", "conversation", t.ident.Key)
		g.pool.Return(t.live, pool.Broken)
		return "the CLI did not say where the answer ends"
	}
	// The mapping, the lease's fence and the delivered tool results are
	// one write: a turn costs one transaction.
	version, err := g.cfg.Sessions.Publish(pctx, next, t.mapping.Version, t.verdict.Kind, session.Turn{Lease: t.lease, Delivered: t.delivered})
	switch {
	case version == 0 && errors.Is(err, session.ErrConflict):
		g.log.WarnContext(ctx, "the conversation moved on while this turn ran; its process is closed", "conversation", t.ident.Key)
		g.pool.Return(t.live, pool.Broken)
		return "the conversation moved on elsewhere while this turn ran"
	case version == 0:
		g.log.ErrorContext(ctx, "store: could not publish the conversation; its process is closed", "conversation", t.ident.Key, "err", err)
		g.pool.Return(t.live, pool.Broken)
		return "the store could not save it"
	case err != nil:
		g.log.WarnContext(ctx, "store: the conversation was published but the clean-up after it failed", "conversation", t.ident.Key, "err", err)
	}
	if g.cfg.Transcripts != nil {
		// Another host resumes from it once this one is gone or drains.
		g.cfg.Transcripts.Save(t.ident.Key, sess.ID(), t.opts.Dir)
	}
	unsaved := ""
	if g.cfg.NoLive && !res.Paused {
		g.pool.Return(t.live, pool.Broken)
		return unsaved
	}
	t.live.Version, t.live.Pin = version, pin
	// A first turn the client did not name (its key is a fingerprint) is
	// most often all there will be: titles, summaries, one-shot prompts.
	// Its process is kept briefly; a turn waiting for tool results is not
	// a one-off.
	t.live.OneOff = t.ident.Fingerprint && version == 1 && !res.Paused
	g.pool.Return(t.live, pool.Keep)
	return unsaved
}

// onlyUser reports that msgs are all the user's: what a paused turn can
// take (its results, and steering beside or after them).
func onlyUser(msgs []anthropic.Message) bool {
	for _, m := range msgs {
		if m.Role != anthropic.RoleUser {
			return false
		}
	}
	return len(msgs) > 0
}

// hold records, for a turn cut or failed after the CLI took its tool
// results, that the session holds them: the request's messages, the last
// one (the results) resumable where the CLI took it and kept as a slot.
// The client's next request may carry that message with blocks added (an
// interruption's note, the user's next words): it resumes there and sends
// only those, rather than replaying. Nothing is recorded when the results
// were not all taken, or another turn holds the conversation now.
func (t *turn) hold(ctx context.Context, sess backend.Session, in backend.Input) {
	g := t.g
	h, ok := sess.(backend.ResultHolder)
	if !ok || len(in.Results) == 0 || t.leaseLost() {
		return
	}
	pin := h.HeldAt()
	if pin == "" || sess.ID() == "" {
		return
	}
	next := t.mapping
	next.Client, next.SessionID = t.ident.Client, sess.ID()
	next.State = lineage.Hold(withoutPendingEnd(t.mapping.State), t.verdict, t.in, pin, t.tail)
	next.Cwd, next.ClientCwd, next.Model = t.opts.Dir, t.ident.Cwd, t.req.Model
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), publishTimeout)
	defer cancel()
	// The results are not marked consumed: nothing answered them yet, and
	// the request sent again as it was runs them again (a replay).
	if version, err := g.cfg.Sessions.Publish(pctx, next, t.mapping.Version, t.verdict.Kind, session.Turn{Lease: t.lease}); version == 0 {
		g.log.WarnContext(ctx, "could not record the tool results the CLI took before the turn was cut", "conversation", t.ident.Key, "err", err)
		return
	}
	g.log.InfoContext(ctx, "the turn was cut after the CLI took its tool results: the conversation resumes there", "conversation", t.ident.Key, "pin", pin)
}

// sendFrom returns the messages the session lacks under a verdict; for a
// message that only gained blocks, just the new blocks. The blocks the
// verdict counted are those lineage digests: thinking, and the client's
// per-turn blocks where lineage left them out, pass through uncounted.
func (t *turn) sendFrom() []anthropic.Message {
	v := t.verdict
	out := append([]anthropic.Message(nil), t.req.Messages[v.From:]...)
	if v.Skip > 0 && len(out) > 0 {
		first := out[0]
		_, filtered := adapter.DurableBlocks(t.transient, first)
		kept := first.Content[:0:0]
		skipped := 0
		for _, b := range first.Content {
			counted := b.Type != anthropic.BlockThinking && b.Type != anthropic.BlockRedactedThinking &&
				!(filtered && t.transient.Transient(b))
			if skipped < v.Skip && counted {
				skipped++
				continue
			}
			kept = append(kept, b)
		}
		out[0] = anthropic.Message{Role: first.Role, Content: kept}
	}
	return out
}

// staleSession recognises a backend's refusal to resume a session it has
// no record of (the claude CLI says so in words).
func staleSession(f *backend.Failure) bool {
	return f.Code == backend.CodeStaleSession || f.Kind == backend.FailBackend &&
		(strings.Contains(f.Message, "No conversation found") || strings.Contains(f.Message, "No message found"))
}

// dirExists reports whether dir is a directory on this host.
func dirExists(dir string) bool {
	st, err := os.Stat(dir)
	return err == nil && st.IsDir()
}
