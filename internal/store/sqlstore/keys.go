package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"hash/fnv"
	"strings"
	"time"

	"github.com/meridian-gw/meridian/internal/store"
)

type keys struct{ s *DB }

const keyColumns = `name, digest, profiles, models, rpm, concurrent, tokens_per_day, expires_at, created_at, revoked_at, rotated_at,
	default_model, budget_micros, budget_alert_micros, budget_per, capture`

// keyLedger is the lock one key's admissions take turns on: a hash of its
// name above the store's own ledgers (two keys sharing one only wait for
// each other).
func keyLedger(name string) int64 {
	h := fnv.New32a()
	h.Write([]byte(name))
	return 1<<32 + int64(h.Sum32())
}

// optional is a time kept as 0 when unset.
func optional(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return ms(t)
}

func fromOptional(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return fromMS(v)
}

func joinList(vs []string) string { return strings.Join(vs, ",") }

func splitList(v string) []string {
	if v == "" {
		return nil
	}
	return strings.Split(v, ",")
}

func scanKey(row interface{ Scan(...any) error }) (store.Key, error) {
	var k store.Key
	var profiles, models string
	var expires, created, revoked, rotated int64
	err := row.Scan(&k.Name, &k.Digest, &profiles, &models, &k.RPM, &k.Concurrent, &k.TokensPerDay,
		&expires, &created, &revoked, &rotated, &k.DefaultModel, &k.Budget, &k.BudgetAlert, &k.Per, &k.Capture)
	if errors.Is(err, sql.ErrNoRows) {
		return k, store.ErrNotFound
	}
	k.Profiles, k.Models = splitList(profiles), splitList(models)
	k.Expires, k.Created, k.Revoked, k.Rotated = fromOptional(expires), fromMS(created), fromOptional(revoked), fromOptional(rotated)
	return k, err
}

func (ks keys) Add(ctx context.Context, k store.Key) error {
	ctx, cancel := ks.s.call(ctx)
	defer cancel()
	n, err := affected(ks.s.exec(ctx, `INSERT INTO api_keys (`+keyColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 0, 0, ?, ?, ?, ?, ?)
		ON CONFLICT DO NOTHING`, k.Name, k.Digest, joinList(k.Profiles), joinList(k.Models), k.RPM, k.Concurrent,
		k.TokensPerDay, optional(k.Expires), ms(k.Created), k.DefaultModel, k.Budget, k.BudgetAlert, k.Per, k.Capture))
	if err == nil && n == 0 {
		err = store.ErrConflict
	}
	return wrap("add a key", err)
}

func (ks keys) Get(ctx context.Context, name string) (store.Key, error) {
	ctx, cancel := ks.s.call(ctx)
	defer cancel()
	k, err := scanKey(ks.s.queryRow(ctx, `SELECT `+keyColumns+` FROM api_keys WHERE name = ?`, name))
	return k, wrap("read a key", err)
}

func (ks keys) ByDigest(ctx context.Context, digest string) (store.Key, error) {
	ctx, cancel := ks.s.call(ctx)
	defer cancel()
	k, err := scanKey(ks.s.queryRow(ctx, `SELECT `+keyColumns+` FROM api_keys WHERE digest = ?`, digest))
	return k, wrap("look a key up", err)
}

func (ks keys) List(ctx context.Context) ([]store.Key, error) {
	ctx, cancel := ks.s.call(ctx)
	defer cancel()
	rows, err := ks.s.query(ctx, `SELECT `+keyColumns+` FROM api_keys ORDER BY name`)
	if err != nil {
		return nil, wrap("list the keys", err)
	}
	defer rows.Close()
	var out []store.Key
	for rows.Next() {
		k, err := scanKey(rows)
		if err != nil {
			return nil, wrap("list the keys", err)
		}
		out = append(out, k)
	}
	return out, wrap("list the keys", rows.Err())
}

func (ks keys) Revoke(ctx context.Context, name string, at time.Time) error {
	ctx, cancel := ks.s.call(ctx)
	defer cancel()
	n, err := affected(ks.s.exec(ctx, `UPDATE api_keys SET revoked_at = ? WHERE name = ? AND revoked_at = 0`, ms(at), name))
	if err == nil && n == 0 {
		// Revoking twice keeps the first time; only an unknown name fails.
		if _, err = ks.Get(ctx, name); err != nil {
			return err
		}
	}
	return wrap("revoke a key", err)
}

func (ks keys) Update(ctx context.Context, k store.Key) error {
	ctx, cancel := ks.s.call(ctx)
	defer cancel()
	n, err := affected(ks.s.exec(ctx, `UPDATE api_keys SET profiles = ?, models = ?, rpm = ?, concurrent = ?, tokens_per_day = ?,
		expires_at = ?, default_model = ?, budget_micros = ?, budget_alert_micros = ?, budget_per = ?, capture = ? WHERE name = ?`,
		joinList(k.Profiles), joinList(k.Models), k.RPM, k.Concurrent, k.TokensPerDay, optional(k.Expires),
		k.DefaultModel, k.Budget, k.BudgetAlert, k.Per, k.Capture, k.Name))
	if err == nil && n == 0 {
		err = store.ErrNotFound
	}
	return wrap("update a key", err)
}

func (ks keys) Rotate(ctx context.Context, name, digest string, at time.Time) error {
	ctx, cancel := ks.s.call(ctx)
	defer cancel()
	n, err := affected(ks.s.exec(ctx, `UPDATE api_keys SET digest = ?, rotated_at = ? WHERE name = ?`, digest, ms(at), name))
	if err == nil && n == 0 {
		err = store.ErrNotFound
	}
	return wrap("rotate a key", err)
}

func (ks keys) Admit(ctx context.Context, name string, run store.KeyRun, since time.Time, days store.KeyDays, admit func(store.KeyUse) bool) (bool, error) {
	ctx, cancel := ks.s.call(ctx)
	defer cancel()
	ok := false
	err := ks.s.tx(ctx, keyLedger(name), func(tx *Tx) error {
		if _, err := tx.exec(`DELETE FROM key_hits WHERE name = ? AND at < ?`, name, ms(since)); err != nil {
			return err
		}
		if _, err := tx.exec(`DELETE FROM key_running WHERE name = ? AND until_at <= ?`, name, ms(run.At)); err != nil {
			return err
		}
		var use store.KeyUse
		rows, err := tx.query(`SELECT at FROM key_hits WHERE name = ?`, name)
		if err != nil {
			return err
		}
		for rows.Next() {
			var at int64
			if err := rows.Scan(&at); err != nil {
				rows.Close()
				return err
			}
			use.Hits = append(use.Hits, fromMS(at))
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if err := tx.queryRow(`SELECT count(*) FROM key_running WHERE name = ?`, name).Scan(&use.Running); err != nil {
			return err
		}
		if err := tx.queryRow(`SELECT coalesce(sum(CASE WHEN day = ? THEN tokens ELSE 0 END), 0), coalesce(sum(CASE WHEN day >= ? THEN micros ELSE 0 END), 0)
			FROM key_tokens WHERE name = ? AND day >= ?`, days.Today, days.BudgetFrom, name, min(days.Today, days.BudgetFrom)).Scan(&use.TokensToday, &use.Spent); err != nil {
			return err
		}
		if !admit(use) {
			return nil
		}
		if _, err := tx.exec(`INSERT INTO key_hits (name, at) VALUES (?, ?)`, name, ms(run.At)); err != nil {
			return err
		}
		if _, err := tx.exec(`INSERT INTO key_running (name, id, host, until_at) VALUES (?, ?, ?, ?)`,
			name, run.ID, run.Host, ms(run.Until)); err != nil {
			return err
		}
		ok = true
		return nil
	})
	return ok, wrap("admit a request of a key", err)
}

func (ks keys) Renew(ctx context.Context, name, id string, until time.Time) error {
	ctx, cancel := ks.s.call(ctx)
	defer cancel()
	_, err := ks.s.exec(ctx, `UPDATE key_running SET until_at = ? WHERE name = ? AND id = ?`, ms(until), name, id)
	return wrap("renew a key's running request", err)
}

func (ks keys) Release(ctx context.Context, name, id string) error {
	ctx, cancel := ks.s.call(ctx)
	defer cancel()
	_, err := ks.s.exec(ctx, `DELETE FROM key_running WHERE name = ? AND id = ?`, name, id)
	return wrap("release a key's running request", err)
}

// keyDays is how many days of token and spend counts are kept: a
// month's budget reaches back 30 days at most.
const keyDays = 31

func (ks keys) AddUse(ctx context.Context, name string, days store.KeyDays, tokens, micros int64) (int64, error) {
	ctx, cancel := ks.s.call(ctx)
	defer cancel()
	var spent int64
	// Under the key's own lock, concurrent answers add in turn and each
	// sees the spend with its own: exactly one sees a threshold crossed.
	err := ks.s.tx(ctx, keyLedger(name), func(tx *Tx) error {
		if _, err := tx.exec(`INSERT INTO key_tokens (name, day, tokens, micros) VALUES (?, ?, ?, ?)
			ON CONFLICT (name, day) DO UPDATE SET tokens = key_tokens.tokens + excluded.tokens, micros = key_tokens.micros + excluded.micros`,
			name, days.Today, tokens, micros); err != nil {
			return err
		}
		if _, err := tx.exec(`DELETE FROM key_tokens WHERE name = ? AND day < ?`, name, days.Today-keyDays); err != nil {
			return err
		}
		return tx.queryRow(`SELECT coalesce(sum(micros), 0) FROM key_tokens WHERE name = ? AND day >= ?`, name, days.BudgetFrom).Scan(&spent)
	})
	return spent, wrap("count a key's tokens and spend", err)
}
