package apikeys

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"time"

	"github.com/meridian-gw/meridian/internal/keyrule"
	"github.com/meridian-gw/meridian/internal/store"
)

// runLease is how long a key's running request counts when its host stops
// renewing it (it died holding it); running requests renew it at half.
const runLease = 2 * time.Minute

// Limits are a key's limits, in the pure rules' terms.
func Limits(k store.Key) keyrule.Limits {
	return keyrule.Limits{RPM: k.RPM, Concurrent: k.Concurrent, TokensPerDay: k.TokensPerDay}
}

// Admission counts requests against their keys' limits, on every host at
// once: each admitted request is a hit and a running request, leased and
// renewed while it runs, and the tokens its answers use count against
// the key's day.
type Admission struct {
	keys store.Keys
	host string
	log  *slog.Logger
	now  func() time.Time // the day an answer's tokens count on
}

// NewAdmission counts in keys, as host.
func NewAdmission(keys store.Keys, host string, log *slog.Logger) *Admission {
	return &Admission{keys: keys, host: host, log: log, now: time.Now}
}

// Admit counts one request of k against its limits. Admitted, release
// ends its count once it has finished; refused, release is nil and the
// verdict says which limit and how long to wait. A store error admits
// nothing.
func (a *Admission) Admit(ctx context.Context, k store.Key, now time.Time) (release func(), v keyrule.Verdict, err error) {
	lim := Limits(k)
	run := store.KeyRun{ID: rand.Text(), Host: a.host, At: now, Until: now.Add(runLease)}
	admitted, err := a.keys.Admit(ctx, k.Name, run, now.Add(-keyrule.Window), keyrule.Day(now), func(u store.KeyUse) bool {
		v = keyrule.Decide(lim, keyrule.Use{Hits: u.Hits, Running: u.Running, TokensToday: u.TokensToday}, now)
		return v.OK
	})
	if err != nil {
		return nil, v, fmt.Errorf("count a request of the key %q: %w", k.Name, err)
	}
	if !admitted {
		return nil, v, nil
	}
	return a.running(ctx, k.Name, run.ID), v, nil
}

// running keeps an admitted request counted while it runs (renewing its
// lease) and returns what releases it.
func (a *Admission) running(ctx context.Context, name, id string) func() {
	stop, renewed := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(renewed)
		t := time.NewTicker(runLease / 2)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case now := <-t.C:
				if err := a.keys.Renew(context.WithoutCancel(ctx), name, id, now.Add(runLease)); err != nil {
					a.log.Warn("store: could not renew a key's running request", "key", name, "err", err)
				}
			}
		}
	}()
	return func() {
		close(stop)
		<-renewed
		if err := a.keys.Release(context.WithoutCancel(ctx), name, id); err != nil {
			a.log.Warn("store: could not release a key's running request; its lease lapses instead", "key", name, "err", err)
		}
	}
}

// Tokens returns what adds to the key's day the tokens total has grown by
// from now: total reads the request's running count of tokens.
func (a *Admission) Tokens(ctx context.Context, name string, total func() int64) func() {
	before := total()
	return func() {
		if used := total() - before; used > 0 {
			if err := a.keys.AddTokens(context.WithoutCancel(ctx), name, keyrule.Day(a.now()), used); err != nil {
				a.log.Warn("store: could not count a key's tokens", "key", name, "err", err)
			}
		}
	}
}

// Standing is where a key's limits stand now.
type Standing struct {
	RequestsLastMinute int
	Running            int
	TokensToday        int64
}

// Standing reads the key's use as its next admission would, recording
// nothing.
func (a *Admission) Standing(ctx context.Context, name string, now time.Time) (Standing, error) {
	var s Standing
	_, err := a.keys.Admit(ctx, name, store.KeyRun{At: now}, now.Add(-keyrule.Window), keyrule.Day(now), func(u store.KeyUse) bool {
		for _, h := range u.Hits {
			if now.Sub(h) < keyrule.Window {
				s.RequestsLastMinute++
			}
		}
		s.Running, s.TokensToday = u.Running, u.TokensToday
		return false
	})
	if err != nil {
		return s, fmt.Errorf("read the key %q's use: %w", name, err)
	}
	return s, nil
}
