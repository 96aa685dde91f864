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
	return keyrule.Limits{RPM: k.RPM, Concurrent: k.Concurrent, TokensPerDay: k.TokensPerDay, Budget: k.Budget, Per: k.Per}
}

// days are the days a key's admission at now counts over.
func days(k store.Key, now time.Time) store.KeyDays {
	d := store.KeyDays{Today: keyrule.Day(now), BudgetFrom: keyrule.Day(now)}
	if k.Budget > 0 {
		d.BudgetFrom = keyrule.Day(keyrule.PeriodStart(k.Per, now))
	}
	return d
}

// BudgetCrossing is a key's spend reaching its alert mark (Hard false) or
// its whole budget (Hard true: its next request is refused until Ends).
type BudgetCrossing struct {
	Key                 string
	Spent, Mark, Budget float64 // US dollars
	Per                 string
	Ends                time.Time
	Hard                bool
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
	// crossed hears of each budget crossing, on the host whose answer
	// made it; nil hears nothing.
	crossed func(BudgetCrossing)
}

// NewAdmission counts in keys, as host; crossed (nil: nobody) hears of a
// key's spend crossing its alert mark or its budget.
func NewAdmission(keys store.Keys, host string, log *slog.Logger, crossed func(BudgetCrossing)) *Admission {
	return &Admission{keys: keys, host: host, log: log, now: time.Now, crossed: crossed}
}

// Admit counts one request of k against its limits. Admitted, release
// ends its count once it has finished; refused, release is nil and the
// verdict says which limit and how long to wait. A store error admits
// nothing.
func (a *Admission) Admit(ctx context.Context, k store.Key, now time.Time) (release func(), v keyrule.Verdict, err error) {
	lim := Limits(k)
	run := store.KeyRun{ID: rand.Text(), Host: a.host, At: now, Until: now.Add(runLease)}
	admitted, err := a.keys.Admit(ctx, k.Name, run, now.Add(-keyrule.Window), days(k, now), func(u store.KeyUse) bool {
		v = keyrule.Decide(lim, keyrule.Use{Hits: u.Hits, Running: u.Running, TokensToday: u.TokensToday, Spent: u.Spent}, now)
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

// Use is what a request has used so far: the tokens a key's day counts
// and the API-equivalent cost in millionths of a dollar.
type Use struct{ Tokens, Micros int64 }

// Counting returns what adds to the key's day and budget what the use
// has grown by from now (used reads the request's running count), and
// tells of a budget crossed by it.
func (a *Admission) Counting(ctx context.Context, k store.Key, used func() Use) func() {
	before := used()
	return func() {
		u := used()
		tokens, micros := u.Tokens-before.Tokens, u.Micros-before.Micros
		if tokens <= 0 && micros <= 0 {
			return
		}
		now := a.now()
		spent, err := a.keys.AddUse(context.WithoutCancel(ctx), k.Name, days(k, now), max(tokens, 0), max(micros, 0))
		if err != nil {
			a.log.Warn("store: could not count a key's tokens and spend", "key", k.Name, "err", err)
			return
		}
		if k.Budget == 0 || a.crossed == nil {
			return
		}
		c := BudgetCrossing{Key: k.Name, Spent: keyrule.Dollars(spent), Mark: keyrule.Dollars(k.BudgetAlert), Budget: keyrule.Dollars(k.Budget),
			Per: k.Per, Ends: keyrule.PeriodEnd(k.Per, now)}
		if keyrule.Crossed(k.Budget, spent, micros) {
			c.Hard = true
			a.crossed(c)
		} else if keyrule.Crossed(k.BudgetAlert, spent, micros) {
			a.crossed(c)
		}
	}
}

// Standing is where a key's limits stand now.
type Standing struct {
	RequestsLastMinute int
	Running            int
	TokensToday        int64
	// Spent is the budget period's cost so far (millionths of a dollar),
	// Resets when the period ends; both zero without a budget.
	Spent  int64
	Resets time.Time
}

// Standing reads the key's use as its next admission would, recording
// nothing.
func (a *Admission) Standing(ctx context.Context, k store.Key, now time.Time) (Standing, error) {
	var s Standing
	name := k.Name
	_, err := a.keys.Admit(ctx, name, store.KeyRun{At: now}, now.Add(-keyrule.Window), days(k, now), func(u store.KeyUse) bool {
		for _, h := range u.Hits {
			if now.Sub(h) < keyrule.Window {
				s.RequestsLastMinute++
			}
		}
		s.Running, s.TokensToday = u.Running, u.TokensToday
		if k.Budget > 0 {
			s.Spent, s.Resets = u.Spent, keyrule.PeriodEnd(k.Per, now)
		}
		return false
	})
	if err != nil {
		return s, fmt.Errorf("read the key %q's use: %w", name, err)
	}
	return s, nil
}
