// Package journal records the requests that carry an explicit request id
// while they run, by hash only. A request that started and never finished
// because its meridian died has an unknown outcome: it may have run and
// spent, and its answer is gone. The same request after the restart is
// refused with that reason rather than run blindly a second time.
package journal

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/meridian-gw/meridian/internal/spawn/proc"
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

// Journal is the unfinished-request journal in the database.
type Journal struct {
	db    *sql.DB
	owner string
	alive func(owner string) bool
	max   int
	ttl   time.Duration
	now   func() time.Time
}

// New returns the journal in db (its table comes with the store's
// migrations). max and ttl of 0 are the defaults; now nil is time.Now.
func New(db *sql.DB, max int, ttl time.Duration, now func() time.Time) *Journal {
	if max <= 0 {
		max = DefaultMax
	}
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	if now == nil {
		now = time.Now
	}
	return &Journal{db: db, owner: proc.Owner(), alive: proc.OwnerAlive, max: max, ttl: ttl, now: now}
}

// Begin records that the request hash starts. End it when it finishes, in
// any way.
func (j *Journal) Begin(ctx context.Context, hash string) error {
	tx, err := j.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	now := j.now()
	if _, err := tx.ExecContext(ctx, `DELETE FROM unfinished_requests WHERE started_at <= ?`, now.Add(-j.ttl).UnixMilli()); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	var owner string
	switch err := tx.QueryRowContext(ctx, `SELECT owner FROM unfinished_requests WHERE hash = ?`, hash).Scan(&owner); {
	case err == nil:
		if owner == j.owner || j.alive(owner) {
			return ErrRunning
		}
		return ErrUnknownOutcome
	case !errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("journal: %w", err)
	}
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM unfinished_requests`).Scan(&n); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	if n >= j.max {
		return ErrFull
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO unfinished_requests (hash, owner, started_at) VALUES (?, ?, ?)`,
		hash, j.owner, now.UnixMilli()); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	return nil
}

// End records that the request hash finished. It runs even when the
// request's own context has ended.
func (j *Journal) End(ctx context.Context, hash string) error {
	if _, err := j.db.ExecContext(context.WithoutCancel(ctx), `DELETE FROM unfinished_requests WHERE hash = ? AND owner = ?`, hash, j.owner); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	return nil
}
