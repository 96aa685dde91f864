package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/meridian-gw/meridian/internal/store"
)

type answers struct{ s *DB }

func (a answers) Get(ctx context.Context, scope, key string, now time.Time) (store.SavedAnswer, bool, error) {
	ctx, cancel := a.s.call(ctx)
	defer cancel()
	ans := store.SavedAnswer{Scope: scope, Key: key}
	var saved int64
	err := a.s.queryRow(ctx, `SELECT status, header, body, saved_at FROM saved_answers WHERE scope = ? AND key = ? AND expires_at > ?`,
		scope, key, ms(now)).Scan(&ans.Status, &ans.Header, &ans.Body, &saved)
	if errors.Is(err, sql.ErrNoRows) {
		return store.SavedAnswer{}, false, nil
	}
	if err != nil {
		return store.SavedAnswer{}, false, wrap("read a saved answer", err)
	}
	ans.Saved = fromMS(saved)
	rows, err := a.s.query(ctx, `SELECT call_id FROM saved_answer_calls WHERE scope = ? AND key = ?`, scope, key)
	if err != nil {
		return store.SavedAnswer{}, false, wrap("read a saved answer", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return store.SavedAnswer{}, false, wrap("read a saved answer", err)
		}
		ans.Calls = append(ans.Calls, id)
	}
	return ans, true, wrap("read a saved answer", rows.Err())
}

// Put makes room oldest first: the scope's own answers past its bounds,
// then anyone's past the totals. Expired answers go before either.
func (a answers) Put(ctx context.Context, ans store.SavedAnswer, lim store.AnswerLimits) (bool, error) {
	size := int64(len(ans.Body))
	if len(ans.Body) > lim.EntryBytes || size > lim.Bytes || size > lim.TotalBytes || lim.Entries <= 0 || lim.TotalEntries <= 0 {
		return false, nil
	}
	ctx, cancel := a.s.call(ctx)
	defer cancel()
	err := a.s.tx(ctx, ledgerAnswers, func(tx *Tx) error {
		if err := forgetAnswers(tx, `expires_at <= ? OR (scope = ? AND key = ?)`, ms(ans.Saved), ans.Scope, ans.Key); err != nil {
			return err
		}
		for _, bound := range []struct {
			where string
			args  []any
			max   int
			bytes int64
		}{
			{`scope = ?`, []any{ans.Scope}, lim.Entries, lim.Bytes},
			{`TRUE`, nil, lim.TotalEntries, lim.TotalBytes},
		} {
			var n int
			var bytes int64
			if err := tx.queryRow(`SELECT count(*), CAST(coalesce(sum(bytes), 0) AS BIGINT) FROM saved_answers WHERE `+bound.where, bound.args...).
				Scan(&n, &bytes); err != nil {
				return err
			}
			if n < bound.max && bytes+size <= bound.bytes {
				continue
			}
			rows, err := tx.query(`SELECT scope, key, bytes FROM saved_answers WHERE `+bound.where+` ORDER BY seq`, bound.args...)
			if err != nil {
				return err
			}
			type ref struct{ scope, key string }
			var evict []ref
			for (n >= bound.max || bytes+size > bound.bytes) && rows.Next() {
				var r ref
				var b int64
				if err := rows.Scan(&r.scope, &r.key, &b); err != nil {
					rows.Close()
					return err
				}
				evict = append(evict, r)
				n, bytes = n-1, bytes-b
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
			for _, r := range evict {
				if err := forgetAnswers(tx, `scope = ? AND key = ?`, r.scope, r.key); err != nil {
					return err
				}
			}
		}
		if _, err := tx.exec(`INSERT INTO saved_answers (scope, key, status, header, body, bytes, saved_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			ans.Scope, ans.Key, ans.Status, ans.Header, ans.Body, size, ms(ans.Saved), ms(ans.Saved.Add(lim.TTL))); err != nil {
			return err
		}
		for _, id := range ans.Calls {
			if _, err := tx.exec(`INSERT INTO saved_answer_calls (scope, call_id, key) VALUES (?, ?, ?) ON CONFLICT DO NOTHING`,
				ans.Scope, id, ans.Key); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return false, wrap("save an answer", err)
	}
	return true, nil
}

// forgetAnswers deletes the answers matching where, with their calls.
func forgetAnswers(tx *Tx, where string, args ...any) error {
	rows, err := tx.query(`SELECT scope, key FROM saved_answers WHERE `+where, args...)
	if err != nil {
		return err
	}
	var refs [][2]string
	for rows.Next() {
		var r [2]string
		if err := rows.Scan(&r[0], &r[1]); err != nil {
			rows.Close()
			return err
		}
		refs = append(refs, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, r := range refs {
		if _, err := tx.exec(`DELETE FROM saved_answer_calls WHERE scope = ? AND key = ?`, r[0], r[1]); err != nil {
			return err
		}
		if _, err := tx.exec(`DELETE FROM saved_answers WHERE scope = ? AND key = ?`, r[0], r[1]); err != nil {
			return err
		}
	}
	return nil
}

func (a answers) Retire(ctx context.Context, scope string, calls []string) error {
	if len(calls) == 0 {
		return nil
	}
	ctx, cancel := a.s.call(ctx)
	defer cancel()
	return wrap("retire saved answers", a.s.tx(ctx, ledgerAnswers, func(tx *Tx) error {
		return forgetAnswers(tx, `scope = ? AND key IN (SELECT key FROM saved_answer_calls WHERE scope = ? AND call_id IN (`+in(len(calls))+`))`,
			append([]any{scope, scope}, anys(calls)...)...)
	}))
}

func (a answers) Usage(ctx context.Context, scope string, now time.Time) (store.AnswerUsage, error) {
	ctx, cancel := a.s.call(ctx)
	defer cancel()
	var u store.AnswerUsage
	err := a.s.queryRow(ctx, `SELECT count(DISTINCT scope), count(*), CAST(coalesce(sum(bytes), 0) AS BIGINT),
		CAST(coalesce(sum(CASE WHEN scope = ? THEN 1 ELSE 0 END), 0) AS BIGINT),
		CAST(coalesce(sum(CASE WHEN scope = ? THEN bytes ELSE 0 END), 0) AS BIGINT)
		FROM saved_answers WHERE expires_at > ?`, scope, scope, ms(now)).Scan(&u.Scopes, &u.Entries, &u.Bytes, &u.ScopeEntries, &u.ScopeBytes)
	return u, wrap("measure the saved answers", err)
}
