package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/meridian-gw/meridian/internal/store"
)

type hosts struct{ s *DB }

func (h hosts) Beat(ctx context.Context, b store.Host) error {
	ctx, cancel := h.s.call(ctx)
	defer cancel()
	if b.State == "" {
		b.State = store.HostServing
	}
	_, err := h.s.exec(ctx, `INSERT INTO hosts (`+hostColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (host, incarnation) DO UPDATE SET addr = excluded.addr, version = excluded.version, expires_at = excluded.expires_at,
		state = excluded.state, live = excluded.live, running = excluded.running`,
		b.Host, b.Incarnation, b.Addr, b.Version, ms(b.Started), ms(b.Expires), b.State, b.Live, b.Running)
	return wrap("beat", err)
}

func (h hosts) Leave(ctx context.Context, o store.Owner) error {
	ctx, cancel := h.s.call(ctx)
	defer cancel()
	_, err := h.s.exec(ctx, `DELETE FROM hosts WHERE host = ? AND incarnation = ?`, o.Host, o.Incarnation)
	return wrap("leave", err)
}

const hostColumns = `host, incarnation, addr, version, started_at, expires_at, state, live, running`

func scanHost(row scanner) (store.Host, error) {
	var b store.Host
	var started, expires int64
	err := row.Scan(&b.Host, &b.Incarnation, &b.Addr, &b.Version, &started, &expires, &b.State, &b.Live, &b.Running)
	b.Started, b.Expires = fromMS(started), fromMS(expires)
	return b, err
}

func (h hosts) Get(ctx context.Context, o store.Owner) (store.Host, bool, error) {
	ctx, cancel := h.s.call(ctx)
	defer cancel()
	b, err := scanHost(h.s.queryRow(ctx, `SELECT `+hostColumns+` FROM hosts WHERE host = ? AND incarnation = ?`, o.Host, o.Incarnation))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Host{}, false, nil
	}
	if err != nil {
		return store.Host{}, false, wrap("read a heartbeat", err)
	}
	return b, true, nil
}

func (h hosts) List(ctx context.Context, forget time.Time) ([]store.Host, error) {
	ctx, cancel := h.s.call(ctx)
	defer cancel()
	if _, err := h.s.exec(ctx, `DELETE FROM hosts WHERE expires_at < ?`, ms(forget)); err != nil {
		return nil, wrap("forget old heartbeats", err)
	}
	rows, err := h.s.query(ctx, `SELECT `+hostColumns+` FROM hosts ORDER BY host, started_at`)
	if err != nil {
		return nil, wrap("list hosts", err)
	}
	defer rows.Close()
	var out []store.Host
	for rows.Next() {
		b, err := scanHost(rows)
		if err != nil {
			return nil, wrap("list hosts", err)
		}
		out = append(out, b)
	}
	return out, wrap("list hosts", rows.Err())
}
