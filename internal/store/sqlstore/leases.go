package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/meridian-gw/meridian/internal/store"
)

type leases struct{ s *DB }

func (l leases) Acquire(ctx context.Context, c store.LeaseClaim) (bool, store.LeaseHolder, bool, error) {
	ctx, cancel := l.s.call(ctx)
	defer cancel()
	now := ms(c.Now)
	n, err := affected(l.s.exec(ctx, `INSERT INTO turn_leases (profile, key, token, host, incarnation, expires_at) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (profile, key) DO UPDATE SET token = excluded.token, host = excluded.host,
			incarnation = excluded.incarnation, expires_at = excluded.expires_at
		WHERE turn_leases.expires_at < ?`,
		c.Profile, c.Key, c.Token, c.Owner.Host, c.Owner.Incarnation, ms(c.Now.Add(c.TTL)), now))
	if err != nil {
		return false, store.LeaseHolder{}, false, wrap("take a turn lease", err)
	}
	if n == 1 {
		return true, store.LeaseHolder{}, false, nil
	}
	var h store.LeaseHolder
	var expires int64
	err = l.s.queryRow(ctx, `SELECT token, host, incarnation, expires_at FROM turn_leases WHERE profile = ? AND key = ?`, c.Profile, c.Key).
		Scan(&h.Token, &h.Owner.Host, &h.Owner.Incarnation, &expires)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return false, store.LeaseHolder{}, false, nil // released in between
	case err != nil:
		return false, store.LeaseHolder{}, false, wrap("read a turn lease", err)
	}
	h.Expires = fromMS(expires)
	return false, h, true, nil
}

func (l leases) TakeOver(ctx context.Context, c store.LeaseClaim, from string) (bool, error) {
	ctx, cancel := l.s.call(ctx)
	defer cancel()
	n, err := affected(l.s.exec(ctx, `UPDATE turn_leases SET token = ?, host = ?, incarnation = ?, expires_at = ?
		WHERE profile = ? AND key = ? AND token = ?`,
		c.Token, c.Owner.Host, c.Owner.Incarnation, ms(c.Now.Add(c.TTL)), c.Profile, c.Key, from))
	return n == 1, wrap("take over a turn lease", err)
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
