package session

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/meridian-gw/meridian/internal/store"
)

// BusyError reports a conversation whose turn lease stayed taken for the
// whole wait: another turn of it is running. Crowded says the wait was
// never begun: as many turns of it as may wait already do.
type BusyError struct {
	Key        string
	RetryAfter time.Duration
	Crowded    bool
}

func (e *BusyError) Error() string {
	if e.Crowded {
		return fmt.Sprintf("too many turns of conversation %q are waiting", e.Key)
	}
	return fmt.Sprintf("another turn of conversation %q is running", e.Key)
}

// Leases serialise the turns of each conversation: within this process
// with a lock per key, across processes and hosts sharing the store with
// a lease row that expires unless renewed, so a crashed holder frees it.
// Each holding has its own token, which fences the turn's publish.
type Leases struct {
	rows   store.Leases
	owners store.Owners
	ttl    time.Duration
	poll   time.Duration
	now    func() time.Time
	log    *slog.Logger

	// MaxWaiters bounds the turns of one conversation waiting here for
	// its lease beside the one holding it (0: DefaultMaxWaiters); set it
	// before the first Acquire.
	MaxWaiters int

	mu    sync.Mutex
	local map[string]*keyLock // only keys someone holds or waits for
}

type keyLock struct {
	token chan struct{} // holds one token while the key is held
	refs  int
}

// Lease defaults. busyWait bounds the wait a 409 asks for: a running turn
// may end any moment, and the lease's expiry says nothing about when.
const (
	DefaultLeaseTTL = 30 * time.Second
	leasePoll       = 25 * time.Millisecond
	busyWait        = 2 * time.Second
	// DefaultMaxWaiters is the design's bound on one conversation's queue.
	DefaultMaxWaiters = 256
)

// NewLeases returns leases kept in rows, held by owners.Self(). ttl is how
// long a lease lives without renewal (0: DefaultLeaseTTL).
func NewLeases(rows store.Leases, owners store.Owners, ttl time.Duration, log *slog.Logger) *Leases {
	if ttl <= 0 {
		ttl = DefaultLeaseTTL
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Leases{rows: rows, owners: owners, ttl: ttl, poll: leasePoll, now: time.Now, log: log, local: map[string]*keyLock{}}
}

// Lease is a held turn lease; Release it exactly once.
type Lease struct {
	l            *Leases
	profile, key string
	token        string
	version      int64
	lock         *keyLock
	stop         chan struct{}
	renewed      sync.WaitGroup
	localKey     string
	lost         chan struct{} // closed when another holder took the lease
}

// Lost is closed when the lease was taken over (it lapsed, say, while
// this process stalled): the turn must not publish, and should stop.
func (le *Lease) Lost() <-chan struct{} { return le.lost }

// Version is the conversation's published version as the lease was
// taken (0: it had no row, which a turn reads for itself): a turn that
// read this version before it waited for the lease read it as it stands.
func (le *Lease) Version() int64 { return le.version }

// Acquire takes the conversation's turn lease, waiting up to wait. It
// returns a *BusyError when the wait ran out and ctx.Err() when the caller
// went away.
func (l *Leases) Acquire(ctx context.Context, profile, key string, wait time.Duration) (*Lease, error) {
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	localKey := profile + "\x00" + key
	lock, ok := l.ref(localKey)
	if !ok {
		return nil, &BusyError{Key: key, RetryAfter: busyWait, Crowded: true}
	}
	select {
	case lock.token <- struct{}{}:
	case <-ctx.Done():
		l.unref(localKey, lock)
		return nil, ctx.Err()
	case <-deadline.C:
		l.unref(localKey, lock)
		return nil, &BusyError{Key: key, RetryAfter: time.Second}
	}
	token := rand.Text()
	var version int64
	for {
		g, holderExpires, err := l.tryAcquire(ctx, profile, key, token)
		if err != nil {
			l.unlock(localKey, lock)
			return nil, err
		}
		if g.Taken {
			version = g.Version
			break
		}
		select {
		case <-time.After(l.poll):
			continue
		case <-ctx.Done():
			l.unlock(localKey, lock)
			return nil, ctx.Err()
		case <-deadline.C:
			l.unlock(localKey, lock)
			wait := min(max(holderExpires.Sub(l.now()), time.Second), busyWait)
			return nil, &BusyError{Key: key, RetryAfter: wait}
		}
	}
	lease := &Lease{l: l, profile: profile, key: key, token: token, version: version, lock: lock, stop: make(chan struct{}), localKey: localKey, lost: make(chan struct{})}
	lease.renewed.Go(lease.renew)
	return lease, nil
}

// tryAcquire takes the lease if it is free or expired, or takes it over
// from a holder whose process is gone. Not taken, it says when the
// holder's lease expires.
func (l *Leases) tryAcquire(ctx context.Context, profile, key, token string) (store.LeaseGrant, time.Time, error) {
	claim := store.LeaseClaim{Profile: profile, Key: key, Token: token, Owner: l.owners.Self(), Now: l.now(), TTL: l.ttl}
	g, err := l.rows.Acquire(ctx, claim)
	switch {
	case err != nil:
		return g, time.Time{}, fmt.Errorf("turn lease for %q: %w", key, err)
	case g.Taken:
		return g, time.Time{}, nil
	case !g.Held:
		return g, claim.Now, nil // released in between: try again
	}
	holder := g.Holder
	alive, err := l.owners.Alive(ctx, holder.Owner)
	if err != nil {
		return g, time.Time{}, fmt.Errorf("turn lease for %q: %w", key, err)
	}
	if !alive {
		// Its process is gone: the lease is free now, not at its expiry.
		took, err := l.rows.TakeOver(ctx, claim, holder.Token)
		if err != nil {
			return took, time.Time{}, fmt.Errorf("turn lease for %q: %w", key, err)
		}
		if took.Taken {
			l.log.Info("took over the turn lease of a process that is gone", "key", key, "holder", holder.Owner.Host+"/"+holder.Owner.Incarnation)
			return took, time.Time{}, nil
		}
	}
	return store.LeaseGrant{}, holder.Expires, nil
}

// renew keeps the lease alive while it is held. A lease that could not
// be renewed for as long as it lives is lost: past its expiry another
// holder may take it, so the turn must not go on as if it held it.
func (le *Lease) renew() {
	t := time.NewTicker(le.l.ttl / 3)
	defer t.Stop()
	renewed := le.l.now()
	for {
		select {
		case <-le.stop:
			return
		case <-t.C:
		}
		now := le.l.now()
		ctx, cancel := context.WithTimeout(context.Background(), le.l.ttl/3)
		held, err := le.l.rows.Renew(ctx, le.profile, le.key, le.token, now.Add(le.l.ttl))
		cancel()
		if err != nil {
			if now.Sub(renewed) >= le.l.ttl {
				le.l.log.Warn("a turn lease could not be renewed before it expired: the turn stops and publishes nothing", "key", le.key, "err", err)
				close(le.lost)
				return
			}
			le.l.log.Warn("could not renew a turn lease; trying again", "key", le.key, "err", err)
			continue
		}
		renewed = now
		if !held {
			le.l.log.Warn("a turn lease was taken over: the turn stops and publishes nothing", "key", le.key)
			close(le.lost)
			return
		}
	}
}

// Release gives the lease up.
func (le *Lease) Release() {
	close(le.stop)
	le.renewed.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := le.l.rows.Release(ctx, le.profile, le.key, le.token); err != nil {
		le.l.log.Warn("could not release a turn lease; it expires on its own", "key", le.key, "err", err)
	}
	le.l.unlock(le.localKey, le.lock)
}

// ref counts one more holder or waiter of key k, unless as many wait as
// may.
func (l *Leases) ref(k string) (*keyLock, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	lk := l.local[k]
	if lk == nil {
		lk = &keyLock{token: make(chan struct{}, 1)}
		l.local[k] = lk
	}
	most := l.MaxWaiters
	if most <= 0 {
		most = DefaultMaxWaiters
	}
	if lk.refs > most { // the holder and most waiters
		return nil, false
	}
	lk.refs++
	return lk, true
}

func (l *Leases) unref(k string, lk *keyLock) {
	l.mu.Lock()
	defer l.mu.Unlock()
	lk.refs--
	if lk.refs == 0 {
		delete(l.local, k)
	}
}

func (l *Leases) unlock(k string, lk *keyLock) {
	<-lk.token
	l.unref(k, lk)
}

// Held counts the turn leases of a profile that are held now, by any
// meridian sharing the store.
func (l *Leases) Held(ctx context.Context, profile string) (int, error) {
	n, err := l.rows.Held(ctx, profile, l.now())
	if err != nil {
		return 0, fmt.Errorf("turn leases of %q: %w", profile, err)
	}
	return n, nil
}
