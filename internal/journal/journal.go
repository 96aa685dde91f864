// Package journal records the requests that carry an explicit request id
// while they run, by hash only, in the store every host shares. A request
// that started and never finished because its meridian died has an
// unknown outcome: it may have run and spent, and its answer is gone. The
// same request afterwards, on any host, is refused with that reason
// rather than run blindly a second time.
package journal

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/meridian-gw/meridian/internal/store"
)

// Defaults: the design's bounds, 128 requests and 30 minutes.
const (
	DefaultMax = 128
	DefaultTTL = 30 * time.Minute
)

var (
	// ErrUnknownOutcome: the request started under a meridian that died
	// before it finished.
	ErrUnknownOutcome = errors.New("journal: this request started before a restart and never finished; it may have run")
	// ErrRunning: the same request runs now, in another meridian or
	// another connection.
	ErrRunning = errors.New("journal: an identical request is running")
	// ErrFull: too many identified requests are unfinished; admission is
	// refused rather than forgetting one.
	ErrFull = errors.New("journal: too many identified requests are unfinished")
)

// Journal is the unfinished-request journal.
type Journal struct {
	entries store.Journal
	owners  store.Owners
	signals store.Signals // nil: ends are heard by no other host
	max     int
	ttl     time.Duration
	now     func() time.Time
}

// endedTopic is the signal a host sends when it ends an entry: its hash.
const endedTopic = "journal-ended"

// Notifying makes the journal tell every host sharing the store when one
// of its entries ends (Ended hears it), and returns it.
func (j *Journal) Notifying(s store.Signals) *Journal {
	j.signals = s
	return j
}

// Ended hears the hashes of entries ended on any host, as hints: a
// listener also looks again on its own. Without signals it hears nothing.
func (j *Journal) Ended() (hashes <-chan string, stop func()) {
	if j.signals == nil {
		return nil, func() {}
	}
	return j.signals.Listen(endedTopic)
}

// New returns the journal kept in entries, its requests owned by
// owners.Self(). max and ttl of 0 are the defaults; now nil is time.Now.
func New(entries store.Journal, owners store.Owners, max int, ttl time.Duration, now func() time.Time) *Journal {
	if max <= 0 {
		max = DefaultMax
	}
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	if now == nil {
		now = time.Now
	}
	return &Journal{entries: entries, owners: owners, max: max, ttl: ttl, now: now}
}

// Begin records that the request hash starts. End it when it finishes, in
// any way. An entry of a process that is gone (on this host, at once;
// elsewhere, once its heartbeat expired) means the outcome is unknown.
func (j *Journal) Begin(ctx context.Context, hash string) error {
	now := j.now()
	held, err := j.entries.Begin(ctx, store.JournalEntry{Hash: hash, Owner: j.owners.Self(), Started: now}, now.Add(-j.ttl), j.max)
	switch {
	case errors.Is(err, store.ErrFull):
		return ErrFull
	case err != nil:
		return fmt.Errorf("journal: %w", err)
	case held == nil:
		return nil
	}
	alive, err := j.owners.Alive(ctx, held.Owner)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	if alive {
		return ErrRunning
	}
	return ErrUnknownOutcome
}

// End records that the request hash finished. It runs even when the
// request's own context has ended.
func (j *Journal) End(ctx context.Context, hash string) error {
	ctx = context.WithoutCancel(ctx)
	if err := j.entries.End(ctx, hash, j.owners.Self()); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	if j.signals != nil {
		// A hint: a waiter that misses it looks again on its own.
		_ = j.signals.Notify(ctx, endedTopic, hash)
	}
	return nil
}
