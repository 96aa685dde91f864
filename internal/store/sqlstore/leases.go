package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/meridian-gw/meridian/internal/store"
)

type leases struct{ s *DB }

// leaseVersion is what a statement that took a lease returns: the
// conversation's version. The row is read with a share lock where the
// engine has one, so a publish that committed while the claim waited for
// the lease's row is seen though the statement's snapshot predates it.
const leaseVersion = ` RETURNING COALESCE((SELECT version FROM conversations WHERE profile = ? AND key = ?{for_share}), 0)`

func (l leases) Acquire(ctx context.Context, c store.LeaseClaim) (store.LeaseGrant, error) {
	ctx, cancel := l.s.call(ctx)
	defer cancel()
	now := ms(c.Now)
	var g store.LeaseGrant
	err := l.s.queryRow(ctx, `INSERT INTO turn_leases (profile, key, token, host, incarnation, expires_at) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (profile, key) DO UPDATE SET token = excluded.token, host = excluded.host,
			incarnation = excluded.incarnation, expires_at = excluded.expires_at
		WHERE turn_leases.expires_at < ?`+leaseVersion,
		c.Profile, c.Key, c.Token, c.Owner.Host, c.Owner.Incarnation, ms(c.Now.Add(c.TTL)), now, c.Profile, c.Key).Scan(&g.Version)
	switch {
	case err == nil:
		g.Taken = true
		return g, nil
	case !errors.Is(err, sql.ErrNoRows):
		return g, wrap("take a turn lease", err)
	}
	var expires int64
	err = l.s.queryRow(ctx, `SELECT token, host, incarnation, expires_at FROM turn_leases WHERE profile = ? AND key = ?`, c.Profile, c.Key).
		Scan(&g.Holder.Token, &g.Holder.Owner.Host, &g.Holder.Owner.Incarnation, &expires)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return store.LeaseGrant{}, nil // released in between
	case err != nil:
		return store.LeaseGrant{}, wrap("read a turn lease", err)
	}
	g.Holder.Expires = fromMS(expires)
	g.Held = true
	return g, nil
}

func (l leases) TakeOver(ctx context.Context, c store.LeaseClaim, from string) (store.LeaseGrant, error) {
	ctx, cancel := l.s.call(ctx)
	defer cancel()
	var g store.LeaseGrant
	err := l.s.queryRow(ctx, `UPDATE turn_leases SET token = ?, host = ?, incarnation = ?, expires_at = ?
		WHERE profile = ? AND key = ? AND token = ?`+leaseVersion,
		c.Token, c.Owner.Host, c.Owner.Incarnation, ms(c.Now.Add(c.TTL)), c.Profile, c.Key, from, c.Profile, c.Key).Scan(&g.Version)
	switch {
	case err == nil:
		g.Taken = true
	case errors.Is(err, sql.ErrNoRows):
		err = nil
	}
	return g, wrap("take over a turn lease", err)
}

func (l leases) Renew(ctx context.Context, profile, key, token string, expires time.Time) (bool, error) {
	ctx, cancel := l.s.call(ctx)
	defer cancel()
	n, err := affected(l.s.exec(ctx, `UPDATE turn_leases SET expires_at = ? WHERE profile = ? AND key = ? AND token = ?`,
		ms(expires), profile, key, token))
	return n == 1, wrap("renew a turn lease", err)
}

func (l leases) Release(ctx context.Context, profile, key, token string) error {
	ctx, cancel := l.s.call(ctx)
	defer cancel()
	_, err := l.s.exec(ctx, `DELETE FROM turn_leases WHERE profile = ? AND key = ? AND token = ?`, profile, key, token)
	return wrap("release a turn lease", err)
}

func (l leases) Held(ctx context.Context, profile string, now time.Time) (int, error) {
	ctx, cancel := l.s.call(ctx)
	defer cancel()
	var n int
	err := l.s.queryRow(ctx, `SELECT count(*) FROM turn_leases WHERE profile = ? AND expires_at >= ?`, profile, ms(now)).Scan(&n)
	return n, wrap("count turn leases", err)
}
