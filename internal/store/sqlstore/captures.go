package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/meridian-gw/meridian/internal/store"
)

type captures struct{ s *DB }

const captureColumns = `id, at, host, key_name, api, model, status, meta, size`

func scanCapture(row interface{ Scan(...any) error }, whole bool) (store.Capture, error) {
	var c store.Capture
	var at int64
	dest := []any{&c.ID, &at, &c.Host, &c.Key, &c.API, &c.Model, &c.Status, &c.Meta, &c.Size}
	if whole {
		dest = append(dest, &c.Request, &c.Written, &c.Answer)
	}
	err := row.Scan(dest...)
	if errors.Is(err, sql.ErrNoRows) {
		return c, store.ErrNotFound
	}
	c.At = fromMS(at)
	return c, err
}

func (cs captures) Insert(ctx context.Context, c store.Capture) (int64, error) {
	ctx, cancel := cs.s.call(ctx)
	defer cancel()
	var id int64
	err := cs.s.queryRow(ctx, `INSERT INTO captures (at, host, key_name, api, model, status, meta, request, written, answer, size)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`, ms(c.At), c.Host, c.Key, c.API, c.Model, c.Status,
		nonNil(c.Meta), nonNil(c.Request), nonNil(c.Written), nonNil(c.Answer), c.Size).Scan(&id)
	return id, wrap("keep a capture", err)
}

// nonNil keeps an absent part as an empty one (the columns are NOT NULL).
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

func (cs captures) Prune(ctx context.Context, before time.Time, maxBytes int64) error {
	ctx, cancel := cs.s.call(ctx)
	defer cancel()
	if _, err := cs.s.exec(ctx, `DELETE FROM captures WHERE at < ?`, ms(before)); err != nil {
		return wrap("prune old captures", err)
	}
	// The newest are kept while their sizes sum to maxBytes at most.
	_, err := cs.s.exec(ctx, `DELETE FROM captures WHERE id IN (
		SELECT id FROM (SELECT id, sum(size) OVER (ORDER BY id DESC) AS kept FROM captures) newest WHERE kept > ?)`, maxBytes)
	return wrap("prune captures past the bytes bound", err)
}

func (cs captures) Page(ctx context.Context, f store.CaptureFilter, before int64, limit int) ([]store.Capture, error) {
	ctx, cancel := cs.s.call(ctx)
	defer cancel()
	if before <= 0 {
		before = 1<<63 - 1
	}
	q, args := `SELECT `+captureColumns+` FROM captures WHERE id < ?`, []any{before}
	for col, v := range map[string]string{"key_name": f.Key, "api": f.API, "model": f.Model, "host": f.Host} {
		if v != "" {
			q += ` AND ` + col + ` = ?`
			args = append(args, v)
		}
	}
	if f.Failed {
		q += ` AND (status >= 400 OR status = 0)`
	}
	if f.OK {
		q += ` AND status > 0 AND status < 400`
	}
	return cs.list(ctx, q+` ORDER BY id DESC LIMIT ?`, false, append(args, limit)...)
}

func (cs captures) Get(ctx context.Context, id int64) (store.Capture, error) {
	ctx, cancel := cs.s.call(ctx)
	defer cancel()
	c, err := scanCapture(cs.s.queryRow(ctx, `SELECT `+captureColumns+`, request, written, answer FROM captures WHERE id = ?`, id), true)
	return c, wrap("read a capture", err)
}

func (cs captures) Since(ctx context.Context, from time.Time, after int64, limit int) ([]store.Capture, error) {
	ctx, cancel := cs.s.call(ctx)
	defer cancel()
	return cs.list(ctx, `SELECT `+captureColumns+`, request, written, answer FROM captures WHERE at >= ? AND id > ? ORDER BY id LIMIT ?`,
		true, ms(from), after, limit)
}

func (cs captures) list(ctx context.Context, q string, whole bool, args ...any) ([]store.Capture, error) {
	rows, err := cs.s.query(ctx, q, args...)
	if err != nil {
		return nil, wrap("list captures", err)
	}
	defer rows.Close()
	var out []store.Capture
	for rows.Next() {
		c, err := scanCapture(rows, whole)
		if err != nil {
			return nil, wrap("list captures", err)
		}
		out = append(out, c)
	}
	return out, wrap("list captures", rows.Err())
}
