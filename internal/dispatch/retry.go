package dispatch

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/meridian-gw/meridian/internal/answers"
	"github.com/meridian-gw/meridian/internal/anthropic"
	"github.com/meridian-gw/meridian/internal/gateway"
	"github.com/meridian-gw/meridian/internal/journal"
	"github.com/meridian-gw/meridian/internal/retryafter"
)

// Retry is a request that may be the retry of one already answered: it
// carries tool results (the same results twice can only be a retry), or
// its client named it with an explicit id. Key names it exactly (its
// route, id and body), within the credential Scope.
type Retry struct {
	Scope, Key string
	// Named: the client gave the request an id, so it is journaled while
	// it runs.
	Named bool
	// Results are the tool results the request delivers.
	Results []string
	// CacheOnly: the client asks for the saved answer only (Cache-Control:
	// only-if-cached, a client recovering an answer whose delivery broke
	// off); without one nothing runs and the answer is ErrNotCached.
	CacheOnly bool
}

// ErrNotCached answers a cache-only request without a saved answer, as
// HTTP answers only-if-cached without a stored response: 504.
var ErrNotCached = &gateway.Error{Status: http.StatusGatewayTimeout, Type: anthropic.ErrTimeout,
	Message: "no saved answer of this request (Cache-Control: only-if-cached), so nothing was run: send it without only-if-cached to run it"}

// Run is the one run of a retriable request; Save its answer when it has
// one, then call Done exactly once.
type Run struct {
	d     *Dispatcher
	r     Retry
	saved *answers.Run // nil without saved answers
	ended bool         // the journal's entry, when there is one, is ended
}

// Once looks a retriable request up. It returns the saved answer of an
// earlier run (nothing runs again); or, while an identical request runs,
// waits for that run and returns its answer; or makes the caller the
// request's run, journaled when the client named it. Refusals are
// *gateway.Error: too many identical requests waiting, a request whose
// outcome a crash left unknown, an identical one running elsewhere. A
// request that begins to run retires the saved answers its tool results
// answer: the request that asked for them is no longer a retry. A
// cache-only request gets the saved answer (waiting for an identical
// request still running here) or ErrNotCached, and never runs.
func (d *Dispatcher) Once(ctx context.Context, r Retry) (*answers.Answer, *Run, error) {
	run := &Run{d: d, r: r}
	if r.CacheOnly && d.cfg.Answers == nil {
		return nil, nil, ErrNotCached
	}
	if d.cfg.Answers != nil {
		saved, ar, err := d.cfg.Answers.Begin(ctx, r.Scope, r.Key)
		switch {
		case errors.Is(err, answers.ErrBusy):
			return nil, nil, &gateway.Error{Status: http.StatusTooManyRequests, Type: anthropic.ErrRateLimit, RetryAfter: time.Second,
				Message: "too many identical requests are waiting for the first one's answer; retry shortly"}
		case err != nil && ctx.Err() != nil:
			return nil, nil, err // the client left while it waited
		case err != nil:
			d.log.Error("store: could not look up a saved answer", "err", err)
			return nil, nil, gateway.StoreUnavailable("look up the request's saved answer")
		case saved != nil:
			return saved, nil, nil
		case r.CacheOnly:
			ar.Done() // nothing runs, nothing is journaled or retired
			return nil, nil, ErrNotCached
		}
		run.saved = ar
	}
	if r.Named && d.cfg.Journal != nil {
		found, err := d.journal(ctx, run)
		if err != nil || found != nil {
			if run.saved != nil {
				run.saved.Done()
			}
			if err == nil {
				return found, nil, nil
			}
			if ctx.Err() != nil {
				return nil, nil, ctx.Err()
			}
			return nil, nil, d.journalError(err)
		}
	} else {
		run.ended = true
	}
	d.Retire(ctx, r.Scope, r.Results)
	return nil, run, nil
}

// elsewhereRecheck is how often a request whose twin runs on another host
// looks again without a signal that it ended.
const elsewhereRecheck = time.Second

// journal begins run's journal entry. While an identical request runs on
// another host (one running here was waited for already), it waits for
// that one to end, as its duplicates here would: the answer it saved is
// returned as found; one that ended without a saved answer lets this
// request run. Without saved answers there is nothing to wait for.
func (d *Dispatcher) journal(ctx context.Context, run *Run) (found *answers.Answer, err error) {
	ended, stop := d.cfg.Journal.Ended()
	defer stop()
	var tick *time.Ticker
	for {
		err := d.cfg.Journal.Begin(ctx, run.r.Key)
		switch {
		case err == nil:
			if run.saved == nil || tick == nil {
				return nil, nil
			}
			// The twin ended: its answer, when it saved one, is ours.
			found, err := run.saved.Found(ctx)
			if found != nil || err != nil {
				run.endJournal() // nothing runs: the caller ends the rest
				if err != nil {
					d.log.Error("store: could not look up a saved answer", "err", err)
					return nil, errStoreRead
				}
			}
			return found, nil
		case !errors.Is(err, journal.ErrRunning) || run.saved == nil:
			return nil, err
		}
		if tick == nil {
			tick = time.NewTicker(elsewhereRecheck)
			defer tick.Stop()
			d.log.Info("an identical request runs on another host: waiting for its answer")
		}
	wait:
		for {
			select {
			case h := <-ended:
				if h == run.r.Key {
					break wait
				}
			case <-tick.C:
				break wait
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	}
}

// errStoreRead is a saved answer the store could not give.
var errStoreRead = errors.New("dispatch: the store could not give a saved answer")

// Save keeps the run's answer for its retries; the identical requests
// waiting for it get it either way. A store that could not keep it is
// logged: the answer went out, only its retries will run again.
func (r *Run) Save(a answers.Answer) {
	if r.saved == nil {
		return
	}
	if _, err := r.saved.Save(a); err != nil {
		r.d.log.Warn("store: could not save an answer for its retries", "err", err)
	}
}

// Done ends the run: its journal entry is cleared and its waiters take its
// answer, or one of them runs.
func (r *Run) Done() {
	r.endJournal()
	if r.saved != nil {
		r.saved.Done()
	}
}

// endJournal clears the run's journal entry, once.
func (r *Run) endJournal() {
	if r.ended {
		return
	}
	r.ended = true
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.d.cfg.Journal.End(ctx, r.r.Key); err != nil {
		r.d.log.Warn("store: could not clear a finished request from the journal", "err", err)
	}
}

// Retire forgets the saved answers whose tool calls these results answer:
// the request that asked for them is now a new turn, not a retry. Every
// request with tool results, retriable or not, background or not, does.
func (d *Dispatcher) Retire(ctx context.Context, scope string, results []string) {
	if d.cfg.Answers == nil {
		return
	}
	if err := d.cfg.Answers.Retire(ctx, scope, results); err != nil {
		d.log.Warn("store: could not retire the saved answers these tool results answer", "err", err)
	}
}

// Saves reports whether requests of this kind can be answered again: with
// saved answers kept, a retriable request is; without, only the journal
// guards named ones.
func (d *Dispatcher) Saves() bool { return d.cfg.Answers != nil }

func (d *Dispatcher) journalError(err error) *gateway.Error {
	switch {
	case errors.Is(err, journal.ErrUnknownOutcome):
		return &gateway.Error{Status: http.StatusConflict, Type: "conflict_error", Message: "this request (same request id and body) " +
			"started on a meridian that stopped before it finished: it may have run, and its outcome is unknown. " +
			"It is not run a second time; send it with a new request id to run it again"}
	case errors.Is(err, journal.ErrRunning):
		return &gateway.Error{Status: http.StatusConflict, Type: "conflict_error", RetryAfter: time.Second,
			Message: "an identical request (same request id and body) is running; retry when it has finished"}
	case errors.Is(err, journal.ErrFull):
		e := &gateway.Error{Status: anthropic.StatusOverloaded, Type: anthropic.ErrOverloaded,
			Message: "too many requests with request ids are unfinished; retry later"}
		e.RetryAfter, e.WaitSource = retryafter.Compute(retryafter.Facts{Status: e.Status, Message: e.Message, Now: d.cfg.Now()})
		return e
	}
	if errors.Is(err, errStoreRead) {
		return gateway.StoreUnavailable("look up the request's saved answer")
	}
	d.log.Error("store: could not journal a request", "err", err)
	return gateway.StoreUnavailable("record the request in its journal")
}
