package session

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/meridian-gw/meridian/internal/spawn/proc"
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
// with a lock per key, across processes sharing the store with a lease row
// that expires unless renewed, so a crashed holder frees it.
type Leases struct {
	db   *sql.DB
	ttl  time.Duration
	poll time.Duration
	now  func() time.Time
	log  *slog.Logger

	// MaxWaiters bounds the turns of one conversation waiting here for
	// its lease beside the one holding it (0: DefaultMaxWaiters); set it
	// before the first Acquire.
	MaxWaiters int

	mu    sync.Mutex
	local map[string]*keyLock // only keys someone holds or waits for

	// Who holds a lease, so a holder whose process died is known dead.
	host  string
	pid   int
	start uint64
	alive func(pid int, start uint64) bool
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

// NewLeases returns leases over db. ttl is how long a lease lives without
// renewal (0: DefaultLeaseTTL).
func NewLeases(db *sql.DB, ttl time.Duration, log *slog.Logger) *Leases {
	if ttl <= 0 {
		ttl = DefaultLeaseTTL
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	host, _ := os.Hostname()
	pid, start := proc.Self()
	return &Leases{db: db, ttl: ttl, poll: leasePoll, now: time.Now, log: log, local: map[string]*keyLock{},
		host: host, pid: pid, start: start, alive: proc.Alive}
}

// Lease is a held turn lease; Release it exactly once.
type Lease struct {
	l            *Leases
	profile, key string
	owner        string
	lock         *keyLock
	stop         chan struct{}
	renewed      sync.WaitGroup
	localKey     string
	lost         chan struct{} // closed when another holder took the lease
}

// Lost is closed when the lease was taken over (it lapsed, say, while
// this process stalled): the turn must not publish, and should stop.
func (le *Lease) Lost() <-chan struct{} { return le.lost }

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
	owner := l.newOwner()
	for {
		ok, holderExpires, err := l.tryAcquire(ctx, profile, key, owner)
		if err != nil {
			l.unlock(localKey, lock)
			return nil, err
		}
		if ok {
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
	lease := &Lease{l: l, profile: profile, key: key, owner: owner, lock: lock, stop: make(chan struct{}), localKey: localKey, lost: make(chan struct{})}
	lease.renewed.Go(lease.renew)
	return lease, nil
}

// tryAcquire inserts the lease row, or takes over an expired one.
func (l *Leases) tryAcquire(ctx context.Context, profile, key, owner string) (bool, time.Time, error) {
	now := l.now()
	res, err := l.db.ExecContext(ctx, `INSERT INTO turn_leases (profile, key, owner, expires_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (profile, key) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
		WHERE turn_leases.expires_at < ?`, profile, key, owner, now.Add(l.ttl).UnixMilli(), now.UnixMilli())
	if err != nil {
		return false, time.Time{}, fmt.Errorf("turn lease for %q: %w", key, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, time.Time{}, fmt.Errorf("turn lease for %q: %w", key, err)
	}
	if n == 1 {
		return true, time.Time{}, nil
	}
	var expires int64
	var holder string
	err = l.db.QueryRowContext(ctx, `SELECT expires_at, owner FROM turn_leases WHERE profile = ? AND key = ?`, profile, key).Scan(&expires, &holder)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return false, now, nil // released in between: try again
	case err != nil:
		// A fault, not a busy conversation.
		return false, time.Time{}, fmt.Errorf("turn lease for %q: %w", key, err)
	}
	if l.deadHere(holder) {
		// Its process is gone: the lease is free now, not at its expiry.
		res, err := l.db.ExecContext(ctx, `UPDATE turn_leases SET owner = ?, expires_at = ? WHERE profile = ? AND key = ? AND owner = ?`,
			owner, now.Add(l.ttl).UnixMilli(), profile, key, holder)
		if err != nil {
			return false, time.Time{}, fmt.Errorf("turn lease for %q: %w", key, err)
		}
		if n, err := res.RowsAffected(); err == nil && n == 1 {
			l.log.Info("took over the turn lease of a process that is gone", "key", key, "holder", holder)
			return true, time.Time{}, nil
		}
	}
	return false, time.UnixMilli(expires), nil
}

// newOwner names a lease holder: this host and process (pid and start
// time), and a random part for the lease itself.
func (l *Leases) newOwner() string {
	return fmt.Sprintf("%s:%d:%d:%s", l.host, l.pid, l.start, rand.Text())
}

// deadHere reports a holder that ran on this host in a process that is
// gone. Holders on other hosts, or named otherwise, wait for their expiry.
func (l *Leases) deadHere(holder string) bool {
	parts := strings.SplitN(holder, ":", 4)
	if len(parts) != 4 || parts[0] != l.host {
		return false
	}
	pid, err1 := strconv.Atoi(parts[1])
	start, err2 := strconv.ParseUint(parts[2], 10, 64)
	return err1 == nil && err2 == nil && !l.alive(pid, start)
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
		res, err := le.l.db.Exec(`UPDATE turn_leases SET expires_at = ? WHERE profile = ? AND key = ? AND owner = ?`,
			now.Add(le.l.ttl).UnixMilli(), le.profile, le.key, le.owner)
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
		if n, err := res.RowsAffected(); err == nil && n != 1 {
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
	if _, err := le.l.db.Exec(`DELETE FROM turn_leases WHERE profile = ? AND key = ? AND owner = ?`, le.profile, le.key, le.owner); err != nil {
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
// meridian on this database.
func (l *Leases) Held(ctx context.Context, profile string) (int, error) {
	var n int
	err := l.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM turn_leases WHERE profile = ? AND expires_at >= ?`,
		profile, l.now().UnixMilli()).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("turn leases of %q: %w", profile, err)
	}
	return n, nil
}
