// Package failover decides which profile answers next when profiles are
// rate-limited: a refused profile is benched until its window reopens, a
// request tries the profiles that are not benched in priority order, and
// when every one is benched the wait is until the earliest reopens. It
// does no I/O and keeps time only as told.
package failover

import (
	"maps"
	"slices"
	"sync"
	"time"
)

// DefaultBench is how long a profile is benched when its refusal gave no
// wait.
const DefaultBench = time.Minute

// Bench records until when each profile is benched.
type Bench struct {
	mu    sync.Mutex
	until map[string]time.Time
}

// Put benches a profile until now+wait (DefaultBench when wait is 0); a
// later bench never shortens an earlier one.
func (b *Bench) Put(profile string, now time.Time, wait time.Duration) time.Time {
	if wait <= 0 {
		wait = DefaultBench
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.until == nil {
		b.until = map[string]time.Time{}
	}
	t := now.Add(wait)
	if t.After(b.until[profile]) {
		b.until[profile] = t
	}
	return b.until[profile]
}

// Replace makes benches the whole record (as the store shares it): a
// bench it lacks has ended. It returns the benches that ended so, with
// when each was to end.
func (b *Bench) Replace(benches map[string]time.Time) (ended map[string]time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for name, until := range b.until {
		if _, ok := benches[name]; !ok {
			if ended == nil {
				ended = map[string]time.Time{}
			}
			ended[name] = until
		}
	}
	b.until = maps.Clone(benches)
	return ended
}

// Clear ends a profile's bench now.
func (b *Bench) Clear(profile string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.until, profile)
}

// Until says until when a profile is benched (zero when it is not).
func (b *Bench) Until(profile string, now time.Time) time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	if t := b.until[profile]; t.After(now) {
		return t
	}
	return time.Time{}
}

// Order is the profiles a request tries: the chosen one first, then the
// rest in priority order, leaving out the benched. When every profile is
// benched it is empty and reopen is the earliest time one reopens.
func (b *Bench) Order(chosen string, byPriority []string, now time.Time) (order []string, reopen time.Time) {
	candidates := append([]string{chosen}, slices.DeleteFunc(slices.Clone(byPriority), func(p string) bool { return p == chosen })...)
	for _, p := range candidates {
		until := b.Until(p, now)
		if until.IsZero() {
			order = append(order, p)
			continue
		}
		if reopen.IsZero() || until.Before(reopen) {
			reopen = until
		}
	}
	return order, reopen
}
