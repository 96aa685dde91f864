package session

import (
	"context"
	"crypto/rand"
	"database/sql"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// BusyError reports a conversation whose turn lease stayed taken for the
// whole wait: another turn of it is running.
type BusyError struct {
	Key        string
	RetryAfter time.Duration
}

func (e *BusyError) Error() string {
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

	mu    sync.Mutex
	local map[string]*keyLock // only keys someone holds or waits for
}

type keyLock struct {
	token chan struct{} // holds one token while the key is held
	refs  int
}

// Lease defaults.
const (
	DefaultLeaseTTL = 30 * time.Second
	leasePoll       = 25 * time.Millisecond
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
	return &Leases{db: db, ttl: ttl, poll: leasePoll, now: time.Now, log: log, local: map[string]*keyLock{}}
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
}

// Acquire takes the conversation's turn lease, waiting up to wait. It
// returns a *BusyError when the wait ran out and ctx.Err() when the caller
// went away.
func (l *Leases) Acquire(ctx context.Context, profile, key string, wait time.Duration) (*Lease, error) {
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	localKey := profile + "\x00" + key
	lock := l.ref(localKey)
	select {
	case lock.token <- struct{}{}:
	case <-ctx.Done():
		l.unref(localKey, lock)
		return nil, ctx.Err()
	case <-deadline.C:
		l.unref(localKey, lock)
		return nil, &BusyError{Key: key, RetryAfter: time.Second}
	}
	owner := rand.Text()
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
			wait := min(max(holderExpires.Sub(l.now()), time.Second), l.ttl)
			return nil, &BusyError{Key: key, RetryAfter: wait}
		}
	}
	lease := &Lease{l: l, profile: profile, key: key, owner: owner, lock: lock, stop: make(chan struct{}), localKey: localKey}
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
	if n, _ := res.RowsAffected(); n == 1 {
		return true, time.Time{}, nil
	}
	var expires int64
	err = l.db.QueryRowContext(ctx, `SELECT expires_at FROM turn_leases WHERE profile = ? AND key = ?`, profile, key).Scan(&expires)
	if err != nil {
		return false, now, nil // released in between: try again
	}
	return false, time.UnixMilli(expires), nil
}

// renew keeps the lease alive while it is held.
func (le *Lease) renew() {
	t := time.NewTicker(le.l.ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-le.stop:
			return
		case <-t.C:
		}
		res, err := le.l.db.Exec(`UPDATE turn_leases SET expires_at = ? WHERE profile = ? AND key = ? AND owner = ?`,
			le.l.now().Add(le.l.ttl).UnixMilli(), le.profile, le.key, le.owner)
		if err == nil {
			if n, _ := res.RowsAffected(); n != 1 {
				err = fmt.Errorf("the lease was taken over")
			}
		}
		if err != nil {
			le.l.log.Warn("could not renew a turn lease", "key", le.key, "err", err)
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

func (l *Leases) ref(k string) *keyLock {
	l.mu.Lock()
	defer l.mu.Unlock()
	lk := l.local[k]
	if lk == nil {
		lk = &keyLock{token: make(chan struct{}, 1)}
		l.local[k] = lk
	}
	lk.refs++
	return lk
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
