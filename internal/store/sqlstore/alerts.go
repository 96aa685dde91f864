package sqlstore

import (
	"context"
	"time"

	"github.com/meridian-gw/meridian/internal/store"
)

type alerts struct{ s *DB }

func (a alerts) AddSink(ctx context.Context, sink store.AlertSink) error {
	ctx, cancel := a.s.call(ctx)
	defer cancel()
	n, err := affected(a.s.exec(ctx, `INSERT INTO alert_sinks (name, url, format, secret, created_at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT DO NOTHING`, sink.Name, sink.URL, sink.Format, sink.Secret, ms(sink.Created)))
	if err == nil && n == 0 {
		err = store.ErrConflict
	}
	return wrap("add an alert sink", err)
}

func (a alerts) Sinks(ctx context.Context) ([]store.AlertSink, error) {
	ctx, cancel := a.s.call(ctx)
	defer cancel()
	rows, err := a.s.query(ctx, `SELECT name, url, format, secret, created_at FROM alert_sinks ORDER BY name`)
	if err != nil {
		return nil, wrap("read the alert sinks", err)
	}
	defer rows.Close()
	var out []store.AlertSink
	for rows.Next() {
		var s store.AlertSink
		var created int64
		if err := rows.Scan(&s.Name, &s.URL, &s.Format, &s.Secret, &created); err != nil {
			return nil, wrap("read the alert sinks", err)
		}
		s.Created = fromMS(created)
		out = append(out, s)
	}
	return out, wrap("read the alert sinks", rows.Err())
}

func (a alerts) RemoveSink(ctx context.Context, name string) error {
	ctx, cancel := a.s.call(ctx)
	defer cancel()
	n, err := affected(a.s.exec(ctx, `DELETE FROM alert_sinks WHERE name = ?`, name))
	if err == nil && n == 0 {
		err = store.ErrNotFound
	}
	return wrap("remove an alert sink", err)
}

func (a alerts) Claim(ctx context.Context, sa store.SentAlert, keep time.Duration) (bool, error) {
	ctx, cancel := a.s.call(ctx)
	defer cancel()
	var claimed int64
	err := a.s.tx(ctx, 0, func(tx *Tx) error {
		if _, err := tx.exec(`DELETE FROM alerts_sent WHERE at < ?`, ms(sa.At.Add(-keep))); err != nil {
			return err
		}
		res, err := tx.exec(`INSERT INTO alerts_sent (key, at, kind, profile, message, host) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT DO NOTHING`, sa.Key, ms(sa.At), sa.Kind, sa.Profile, sa.Message, sa.Host)
		if err != nil {
			return err
		}
		claimed, err = res.RowsAffected()
		return err
	})
	return claimed > 0, wrap("claim an alert", err)
}

func (a alerts) Recent(ctx context.Context, limit int) ([]store.SentAlert, error) {
	ctx, cancel := a.s.call(ctx)
	defer cancel()
	rows, err := a.s.query(ctx, `SELECT key, at, kind, profile, message, host FROM alerts_sent ORDER BY at DESC, key LIMIT ?`, limit)
	if err != nil {
		return nil, wrap("read the alerts sent", err)
	}
	defer rows.Close()
	var out []store.SentAlert
	for rows.Next() {
		var sa store.SentAlert
		var at int64
		if err := rows.Scan(&sa.Key, &at, &sa.Kind, &sa.Profile, &sa.Message, &sa.Host); err != nil {
			return nil, wrap("read the alerts sent", err)
		}
		sa.At = fromMS(at)
		out = append(out, sa)
	}
	return out, wrap("read the alerts sent", rows.Err())
}
