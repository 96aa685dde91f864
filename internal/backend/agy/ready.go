package agy

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/meridian-gw/meridian/internal/backend"
)

// How long a passed readiness check holds, and how long a failed one
// holds before agy is asked again (the account-check cooldown).
const (
	readyTTL      = 10 * time.Minute
	readyCooldown = 5 * time.Second
)

// readiness is the last answer to "can a session start": agy new enough
// and signed in. A logged-out agy would sit on its login prompt for a
// minute; asking `agy models` first costs about a second and no quota.
type readiness struct {
	mu      sync.Mutex
	err     error
	until   time.Time
	running chan struct{}
}

// ready checks, at most once per readyTTL (readyCooldown after a
// failure), that agy can take a session. Concurrent callers share one
// check. A failure is a 503 (agy missing or too old) or a 401 (signed
// out), either with the wait until agy is asked again.
func (d *Driver) ready(ctx context.Context) error {
	r := &d.readiness
	r.mu.Lock()
	if time.Now().Before(r.until) {
		defer r.mu.Unlock()
		return r.withWait(r.err)
	}
	running := r.running
	if running == nil {
		running = make(chan struct{})
		r.running = running
		d.checks.Go(func() { d.check(running) })
	}
	r.mu.Unlock()
	select {
	case <-running:
	case <-ctx.Done():
		return ctx.Err()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.withWait(r.err)
}

// check asks agy, detached from any one caller; the driver's Close ends
// and joins it.
func (d *Driver) check(done chan struct{}) {
	ctx, cancel := context.WithTimeout(d.closing, 30*time.Second)
	defer cancel()
	err := d.probe(ctx)
	r := &d.readiness
	r.mu.Lock()
	r.err, r.running = err, nil
	r.until = time.Now().Add(readyTTL)
	if err != nil {
		r.until = time.Now().Add(readyCooldown)
		d.log.Warn("agy cannot take sessions now; asking again in a moment", "err", err, "cooldown", readyCooldown)
	}
	r.mu.Unlock()
	close(done)
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
func (r *readiness) withWait(err error) error {
	if err == nil {
		return nil
	}
	wait := max(time.Until(r.until), time.Second)
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
