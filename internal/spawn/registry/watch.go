package registry

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Watch tells a waiting process when anyone — usually another process —
// commits to the database, without reading any table: it polls SQLite's
// data_version on one connection, which changes exactly when another
// connection has committed.
type Watch struct {
	conn *sql.Conn
	last int64
}

// Watch opens a watch. Close it to return its connection.
func (r *Registry) Watch(ctx context.Context) (*Watch, error) {
	conn, err := r.db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("watch spawns: %w", err)
	}
	w := &Watch{conn: conn}
	if w.last, err = w.version(ctx); err != nil {
		_ = conn.Close()
		return nil, err
	}
	return w, nil
}

func (w *Watch) version(ctx context.Context) (int64, error) {
	var v int64
	if err := w.conn.QueryRowContext(ctx, `PRAGMA data_version`).Scan(&v); err != nil {
		return 0, fmt.Errorf("watch spawns: %w", err)
	}
	return v, nil
}

// Wait returns true as soon as a commit is seen, checking every poll, or
// false once max has passed, ctx ended or stop (checked every poll; may be
// nil) said so.
func (w *Watch) Wait(ctx context.Context, poll, max time.Duration, stop func() bool) (bool, error) {
	deadline := time.NewTimer(max)
	defer deadline.Stop()
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return false, nil
		case <-deadline.C:
			return false, nil
		case <-tick.C:
			if stop != nil && stop() {
				return false, nil
			}
			v, err := w.version(ctx)
			if err != nil {
				if ctx.Err() != nil {
					return false, nil
				}
				return false, err
			}
			if v != w.last {
				w.last = v
				return true, nil
			}
		}
	}
}

// Close returns the watch's connection to the pool.
func (w *Watch) Close() error { return w.conn.Close() }
