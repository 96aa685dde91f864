package sqlstore

import (
	"context"
	"time"
)

type bench struct{ s *DB }

func (b bench) Put(ctx context.Context, profile string, until time.Time) (time.Time, error) {
	ctx, cancel := b.s.call(ctx)
	defer cancel()
	var stored int64
	err := b.s.tx(ctx, 0, func(tx *Tx) error {
		if _, err := tx.exec(`INSERT INTO profile_bench (profile, until) VALUES (?, ?)
			ON CONFLICT (profile) DO UPDATE SET until = excluded.until WHERE profile_bench.until < excluded.until`,
			profile, ms(until)); err != nil {
			return err
		}
		return tx.queryRow(`SELECT until FROM profile_bench WHERE profile = ?`, profile).Scan(&stored)
	})
	if err != nil {
		return time.Time{}, wrap("bench a profile", err)
	}
	return fromMS(stored), nil
}

func (b bench) Benched(ctx context.Context, now time.Time) (map[string]time.Time, error) {
	ctx, cancel := b.s.call(ctx)
	defer cancel()
	rows, err := b.s.query(ctx, `SELECT profile, until FROM profile_bench WHERE until > ?`, ms(now))
	if err != nil {
		return nil, wrap("read benched profiles", err)
	}
	defer rows.Close()
	out := map[string]time.Time{}
	for rows.Next() {
		var p string
		var until int64
		if err := rows.Scan(&p, &until); err != nil {
			return nil, wrap("read benched profiles", err)
		}
		out[p] = fromMS(until)
	}
	return out, wrap("read benched profiles", rows.Err())
}
