package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/meridian-gw/meridian/internal/store"
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

func (b bench) Clear(ctx context.Context, profile string) error {
	ctx, cancel := b.s.call(ctx)
	defer cancel()
	_, err := b.s.exec(ctx, `DELETE FROM profile_bench WHERE profile = ?`, profile)
	return wrap("unbench a profile", err)
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

type figures struct{ s *DB }

func (f figures) Put(ctx context.Context, profile string, pf store.PlanFigures) (bool, error) {
	windows, err := json.Marshal(pf.Windows)
	if err != nil {
		return false, fmt.Errorf("store: keep a profile's figures: %w", err)
	}
	if pf.Windows == nil {
		windows = []byte("[]")
	}
	ctx, cancel := f.s.call(ctx)
	defer cancel()
	res, err := f.s.exec(ctx, `INSERT INTO profile_figures (profile, observed_at, windows) VALUES (?, ?, ?)
		ON CONFLICT (profile) DO UPDATE SET observed_at = excluded.observed_at, windows = excluded.windows
		WHERE profile_figures.observed_at < excluded.observed_at`, profile, ms(pf.ObservedAt), string(windows))
	if err != nil {
		return false, wrap("keep a profile's figures", err)
	}
	n, err := res.RowsAffected()
	return n > 0, wrap("keep a profile's figures", err)
}

func (f figures) All(ctx context.Context) (map[string]store.PlanFigures, error) {
	ctx, cancel := f.s.call(ctx)
	defer cancel()
	rows, err := f.s.query(ctx, `SELECT profile, observed_at, windows FROM profile_figures`)
	if err != nil {
		return nil, wrap("read the profiles' figures", err)
	}
	defer rows.Close()
	out := map[string]store.PlanFigures{}
	for rows.Next() {
		var p, windows string
		var at int64
		if err := rows.Scan(&p, &at, &windows); err != nil {
			return nil, wrap("read the profiles' figures", err)
		}
		pf := store.PlanFigures{ObservedAt: fromMS(at)}
		if err := json.Unmarshal([]byte(windows), &pf.Windows); err != nil {
			return nil, fmt.Errorf("store: profile %s's figures: %w", p, err)
		}
		out[p] = pf
	}
	return out, wrap("read the profiles' figures", rows.Err())
}
