package sqlstore

import (
	"context"
	"database/sql"
	"errors"

	"github.com/meridian-gw/meridian/internal/store"
)

type responses struct{ s *DB }

// unfinished are the statuses of a response still being answered.
const unfinished = `('queued', 'in_progress')`

func (r responses) Put(ctx context.Context, resp store.Response, lim store.ResponseLimits) error {
	ctx, cancel := r.s.call(ctx)
	defer cancel()
	size := int64(len(resp.Input) + len(resp.Object))
	return wrap("store a response", r.s.tx(ctx, ledgerResponses, func(tx *Tx) error {
		if err := enforce(tx, lim, size, ""); err != nil {
			return err
		}
		_, err := tx.exec(`INSERT INTO responses (id, scope, created_at, status, background, previous_id, host, incarnation, input, response, bytes)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			resp.ID, resp.Scope, ms(resp.CreatedAt), resp.Status, resp.Background, resp.Previous, resp.Owner.Host, resp.Owner.Incarnation,
			resp.Input, resp.Object, size)
		return err
	}))
}

func (r responses) Update(ctx context.Context, id, status string, object []byte, lim store.ResponseLimits) error {
	ctx, cancel := r.s.call(ctx)
	defer cancel()
	return wrap("update a response", r.s.tx(ctx, ledgerResponses, func(tx *Tx) error {
		n, err := affected(tx.exec(`UPDATE responses SET status = ?, response = ?, bytes = length(input) + ? WHERE id = ?`,
			status, object, len(object), id))
		if err != nil {
			return err
		}
		if n == 0 {
			return store.ErrNotFound // deleted meanwhile
		}
		if err := enforce(tx, lim, 0, id); err != nil && !errors.Is(err, store.ErrFull) {
			return err
		}
		return nil
	}))
}

func (r responses) Fail(ctx context.Context, id string, object []byte) (bool, error) {
	ctx, cancel := r.s.call(ctx)
	defer cancel()
	n, err := affected(r.s.exec(ctx, `UPDATE responses SET status = 'failed', response = ?, bytes = length(input) + ?
		WHERE id = ? AND status IN `+unfinished, object, len(object), id))
	return n == 1, wrap("fail a response", err)
}

func (r responses) Enforce(ctx context.Context, lim store.ResponseLimits) error {
	ctx, cancel := r.s.call(ctx)
	defer cancel()
	return wrap("bound the stored responses", r.s.tx(ctx, ledgerResponses, func(tx *Tx) error { return enforce(tx, lim, 0, "") }))
}

// enforce evicts the oldest finished responses until adding extra bytes
// (and one response, when extra > 0) stays within the bounds. Running
// responses, and the one named keep, are never evicted: if only they are
// left it fails with ErrFull and evicts nothing.
func enforce(tx *Tx, lim store.ResponseLimits, extra int64, keep string) error {
	var count, bytes int64
	if err := tx.queryRow(`SELECT count(*), CAST(coalesce(sum(bytes), 0) AS BIGINT) FROM responses`).Scan(&count, &bytes); err != nil {
		return err
	}
	if extra > 0 {
		count++
		bytes += extra
	}
	if count <= int64(lim.MaxCount) && bytes <= lim.MaxBytes {
		return nil
	}
	rows, err := tx.query(`SELECT id, bytes FROM responses WHERE status NOT IN `+unfinished+` AND id != ? ORDER BY created_at, {rowid}`, keep)
	if err != nil {
		return err
	}
	var evict []string
	for rows.Next() && (count > int64(lim.MaxCount) || bytes > lim.MaxBytes) {
		var id string
		var b int64
		if err := rows.Scan(&id, &b); err != nil {
			rows.Close()
			return err
		}
		evict = append(evict, id)
		count--
		bytes -= b
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if count > int64(lim.MaxCount) || bytes > lim.MaxBytes {
		return store.ErrFull
	}
	for _, id := range evict {
		if _, err := tx.exec(`DELETE FROM responses WHERE id = ?`, id); err != nil {
			return err
		}
		if err := dropLog(tx, id); err != nil {
			return err
		}
	}
	return nil
}

const responseColumns = `id, scope, created_at, status, background, previous_id, host, incarnation, input, response, cancel`

func scanResponse(row scanner) (store.Response, error) {
	var resp store.Response
	var created int64
	var prev sql.NullString
	err := row.Scan(&resp.ID, &resp.Scope, &created, &resp.Status, &resp.Background, &prev, &resp.Owner.Host, &resp.Owner.Incarnation,
		&resp.Input, &resp.Object, &resp.Cancel)
	resp.CreatedAt, resp.Previous = fromMS(created), prev.String
	return resp, err
}

func (r responses) Get(ctx context.Context, scope, id string) (store.Response, error) {
	ctx, cancel := r.s.call(ctx)
	defer cancel()
	resp, err := scanResponse(r.s.queryRow(ctx, `SELECT `+responseColumns+` FROM responses WHERE id = ? AND scope = ?`, id, scope))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Response{}, store.ErrNotFound
	}
	return resp, wrap("read a response", err)
}

func (r responses) Delete(ctx context.Context, scope, id string) error {
	ctx, cancel := r.s.call(ctx)
	defer cancel()
	return wrap("delete a response", r.s.tx(ctx, 0, func(tx *Tx) error {
		n, err := affected(tx.exec(`DELETE FROM responses WHERE id = ? AND scope = ?`, id, scope))
		if err != nil {
			return err
		}
		if n == 0 {
			return store.ErrNotFound
		}
		return dropLog(tx, id)
	}))
}

func (r responses) Unfinished(ctx context.Context) ([]store.Response, error) {
	ctx, cancel := r.s.call(ctx)
	defer cancel()
	rows, err := r.s.query(ctx, `SELECT `+responseColumns+` FROM responses WHERE status IN `+unfinished)
	if err != nil {
		return nil, wrap("list unfinished responses", err)
	}
	defer rows.Close()
	var out []store.Response
	for rows.Next() {
		resp, err := scanResponse(rows)
		if err != nil {
			return nil, wrap("list unfinished responses", err)
		}
		out = append(out, resp)
	}
	return out, wrap("list unfinished responses", rows.Err())
}

func (r responses) AskCancel(ctx context.Context, scope, id string) (bool, error) {
	ctx, cancel := r.s.call(ctx)
	defer cancel()
	n, err := affected(r.s.exec(ctx, `UPDATE responses SET cancel = TRUE WHERE id = ? AND scope = ? AND status IN `+unfinished, id, scope))
	return n == 1, wrap("ask for a response's cancel", err)
}

func (r responses) Usage(ctx context.Context) (int, int64, error) {
	ctx, cancel := r.s.call(ctx)
	defer cancel()
	var count int
	var bytes int64
	err := r.s.queryRow(ctx, `SELECT count(*), CAST(coalesce(sum(bytes), 0) AS BIGINT) FROM responses`).Scan(&count, &bytes)
	return count, bytes, wrap("measure the stored responses", err)
}

func (r responses) SealKey(ctx context.Context, fresh []byte) ([]byte, error) {
	ctx, cancel := r.s.call(ctx)
	defer cancel()
	if _, err := r.s.exec(ctx, `INSERT INTO seal_key (id, key) VALUES (1, ?) ON CONFLICT (id) DO NOTHING`, fresh); err != nil {
		return nil, wrap("seal key", err)
	}
	var stored []byte
	err := r.s.queryRow(ctx, `SELECT key FROM seal_key WHERE id = 1`).Scan(&stored)
	return stored, wrap("seal key", err)
}
