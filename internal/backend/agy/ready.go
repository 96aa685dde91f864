package agy

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/meridian-gw/meridian/internal/backend"
)

// readyCooldown is how long a failed readiness check answers for itself
// before agy is asked again: a storm of starts against a signed-out agy
// asks it once.
const readyCooldown = 5 * time.Second

// readiness is whether a session can start: agy new enough and signed in.
// A logged-out agy would sit on its login prompt for a minute; `agy
// models` answers in about a second and costs no quota. A passed check is
// never reused by a later start, so a sign-out is noticed at the next
// session: only starts that arrive while one check runs share it. A
// failed one answers for readyCooldown.
type readiness struct {
	mu      sync.Mutex
	running *readyRun // the check in progress, nil when none
	passed  bool      // the last check passed
	failed  error     // the last check's failure, answered until until
	until   time.Time
}

// readyRun is one check; err is set before done closes.
type readyRun struct {
	done chan struct{}
	err  error
}

// beginReady starts a readiness check, or joins the one running, and
// returns how to wait for its answer and whether the last check passed
// (then the process may start while this one runs); a recent failure is
// returned at once instead. A failure is a 503 (agy missing or too old)
// or a 401 (signed out), either with the wait until agy is asked again.
func (d *Driver) beginReady() (wait func(context.Context) error, passed bool, failed error) {
	r := &d.readiness
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failed != nil && time.Now().Before(r.until) {
		return nil, false, withWait(r.failed, r.until)
	}
	run := r.running
	if run == nil {
		run = &readyRun{done: make(chan struct{})}
		r.running = run
		d.checks.Go(func() { d.check(run) })
	}
	return func(ctx context.Context) error {
		select {
		case <-run.done:
			return run.err
		case <-ctx.Done():
			return ctx.Err()
		}
	}, r.passed, nil
}

// probeAttempts is how many times a readiness check asks agy when it
// does not answer in time: a slow start (a cold disk, agy's own network
// round trips) is given a second chance before it is reported.
const probeAttempts = 2

// check asks agy, detached from any one caller; the driver's Close ends
// and joins it.
func (d *Driver) check(run *readyRun) {
	var err error
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(d.closing, d.cfg.ProbeTimeout)
		err = d.probe(ctx)
		timedOut := errors.Is(ctx.Err(), context.DeadlineExceeded)
		cancel()
		if !timedOut || d.closing.Err() != nil {
			break
		}
		if attempt == probeAttempts {
			err = fmt.Errorf("%w: agy did not answer its readiness check (agy --version, agy models) within %s, asked %d times",
				backend.ErrUnavailable, d.cfg.ProbeTimeout, probeAttempts)
			break
		}
		d.log.Warn("agy did not answer its readiness check in time; asking once more", "timeout", d.cfg.ProbeTimeout)
	}
	r := &d.readiness
	r.mu.Lock()
	r.running = nil
	r.failed, r.passed = nil, err == nil
	if err != nil {
		r.failed, r.until = err, time.Now().Add(readyCooldown)
		err = withWait(err, r.until)
		d.log.Warn("agy cannot take sessions now; asking again in a moment", "err", err, "cooldown", readyCooldown)
	}
	run.err = err
	r.mu.Unlock()
	close(run.done)
}

func (d *Driver) probe(ctx context.Context) error {
	if _, err := d.Version(ctx); err != nil {
		return err
	}
	a, err := d.Auth(ctx)
	if err != nil {
		return err
	}
	if !a.LoggedIn {
		return &backend.Failure{Kind: backend.FailUpstream, Status: 401, Type: "authentication_error",
			Message: "agy is not signed in"}
	}
	return nil
}

// withWait gives a failure the time left until agy is asked again.
func withWait(err error, until time.Time) error {
	wait := max(time.Until(until), time.Second)
	var f *backend.Failure
	if errors.As(err, &f) {
		g := *f
		g.RetryDelay = wait
		return &g
	}
	return &waitError{err: err, wait: wait}
}

// waitError is a failed check with the wait before the next one.
type waitError struct {
	err  error
	wait time.Duration
}

func (e *waitError) Error() string             { return e.err.Error() }
func (e *waitError) Unwrap() error             { return e.err }
func (e *waitError) RetryAfter() time.Duration { return e.wait }
