package sqlstore

import (
	"context"
	"database/sql"
	"strings"
	"time"

	"github.com/meridian-gw/meridian/internal/store"
)

type telemetry struct{ s *DB }

const requestColumns = `host, at, api, client, conversation, profile, model, effective, verdict, live, replay, stream,
	queue_ns, ttft_ns, total_ns, input, output, cache_read, cache_write, cost, status, error_type, key_name, error_message, route`

// Insert writes a batch in one transaction.
func (t telemetry) Insert(ctx context.Context, recs []store.Request) error {
	if len(recs) == 0 {
		return nil
	}
	ctx, cancel := t.s.call(ctx)
	defer cancel()
	return wrap("write telemetry records", t.s.tx(ctx, 0, func(tx *Tx) error {
		stmt, err := tx.tx.PrepareContext(ctx, t.s.q(`INSERT INTO requests (`+requestColumns+`) VALUES (`+in(25)+`)`))
		if err != nil {
			return err
		}
		defer stmt.Close()
		for _, r := range recs {
			if _, err := stmt.ExecContext(ctx, r.Host, r.At.UnixNano(), r.API, r.Client, r.Conversation, r.Profile, r.Model, r.Effective,
				r.Verdict, r.Live, r.Replay, r.Stream, int64(r.Queue), int64(r.TTFT), int64(r.Total),
				r.Input, r.Output, r.CacheRead, r.Cache, r.Cost, r.Status, r.ErrorType, r.Key, r.ErrorMessage, r.Route); err != nil {
				return err
			}
		}
		return nil
	}))
}

func (t telemetry) Prune(ctx context.Context, before time.Time, maxRows int) error {
	ctx, cancel := t.s.call(ctx)
	defer cancel()
	if _, err := t.s.exec(ctx, `DELETE FROM requests WHERE at < ?`, before.UnixNano()); err != nil {
		return wrap("prune telemetry records", err)
	}
	_, err := t.s.exec(ctx, `DELETE FROM requests WHERE id <= (SELECT id FROM requests ORDER BY id DESC LIMIT 1 OFFSET ?)`, maxRows)
	return wrap("prune telemetry records", err)
}

func where(f store.RequestFilter) (string, []any) {
	var conds []string
	var args []any
	add := func(cond string, v ...any) { conds = append(conds, cond); args = append(args, v...) }
	if f.API != "" {
		add("api = ?", f.API)
	}
	if f.Client != "" {
		add("client = ?", f.Client)
	}
	if f.Model != "" {
		add("(model = ? OR effective = ?)", f.Model, f.Model)
	}
	if f.Verdict != "" {
		add("verdict = ?", f.Verdict)
	}
	if f.Key != "" {
		add("key_name = ?", f.Key)
	}
	switch f.Status {
	case "":
	case "ok":
		add("status BETWEEN 200 AND 399")
	case "error":
		add("(status >= 400 OR status = 0)")
	case "client": // the client's to fix: 4xx but a limit's 429 (telemetry.ClientError)
		add("status BETWEEN 400 AND 499 AND status <> 429")
	case "failed": // the gateway's or the upstream's
		add("(status >= 500 OR status = 429 OR status = 0)")
	default:
		add("status = ?", f.Status)
	}
	if f.MissedCache {
		add("verdict = 'continuation' AND status = 200 AND NOT replay AND cache_read = 0")
	}
	if len(conds) == 0 {
		return "", nil
	}
	return " AND " + strings.Join(conds, " AND "), args
}

func (t telemetry) Page(ctx context.Context, f store.RequestFilter, before int64, limit int) ([]store.Request, error) {
	ctx, cancel := t.s.call(ctx)
	defer cancel()
	cond, args := where(f)
	if before <= 0 {
		before = 1<<63 - 1
	}
	return t.list(ctx, `SELECT id, `+requestColumns+` FROM requests WHERE id < ?`+cond+` ORDER BY id DESC LIMIT ?`,
		append(append([]any{before}, args...), limit)...)
}

func (t telemetry) Between(ctx context.Context, from, to time.Time) ([]store.Request, error) {
	ctx, cancel := t.s.call(ctx)
	defer cancel()
	return t.list(ctx, `SELECT id, `+requestColumns+` FROM requests WHERE at >= ? AND at < ? ORDER BY id`, from.UnixNano(), to.UnixNano())
}

func (t telemetry) Totals(ctx context.Context) (store.RequestTotals, error) {
	ctx, cancel := t.s.call(ctx)
	defer cancel()
	var tot store.RequestTotals
	var since sql.NullInt64
	err := t.s.queryRow(ctx, `SELECT count(*),
		CAST(coalesce(sum(CASE WHEN status >= 400 OR status = 0 THEN 1 ELSE 0 END), 0) AS BIGINT),
		CAST(coalesce(sum(CASE WHEN replay THEN 1 ELSE 0 END), 0) AS BIGINT),
		CAST(coalesce(sum(input), 0) AS BIGINT), CAST(coalesce(sum(output), 0) AS BIGINT),
		CAST(coalesce(sum(cache_read), 0) AS BIGINT), CAST(coalesce(sum(cache_write), 0) AS BIGINT),
		coalesce(sum(CASE WHEN cost > 0 THEN cost ELSE 0 END), 0),
		CAST(coalesce(sum(CASE WHEN cost < 0 THEN 1 ELSE 0 END), 0) AS BIGINT), min(at) FROM requests`).Scan(
		&tot.Requests, &tot.Errors, &tot.Replays, &tot.Input, &tot.Output, &tot.CacheRead, &tot.Cache, &tot.Cost, &tot.Unpriced, &since)
	if since.Valid {
		tot.Since = time.Unix(0, since.Int64)
	}
	return tot, wrap("sum telemetry records", err)
}

func (t telemetry) ByHost(ctx context.Context) ([]store.HostRequests, error) {
	ctx, cancel := t.s.call(ctx)
	defer cancel()
	rows, err := t.s.query(ctx, `SELECT host, api, status, count(*) FROM requests GROUP BY host, api, status ORDER BY host, api, status`)
	if err != nil {
		return nil, wrap("count telemetry records by host", err)
	}
	defer rows.Close()
	var out []store.HostRequests
	for rows.Next() {
		var h store.HostRequests
		if err := rows.Scan(&h.Host, &h.API, &h.Status, &h.Count); err != nil {
			return nil, wrap("count telemetry records by host", err)
		}
		out = append(out, h)
	}
	return out, wrap("count telemetry records by host", rows.Err())
}

func (t telemetry) list(ctx context.Context, q string, args ...any) ([]store.Request, error) {
	rows, err := t.s.query(ctx, q, args...)
	if err != nil {
		return nil, wrap("read telemetry records", err)
	}
	defer rows.Close()
	var out []store.Request
	for rows.Next() {
		var r store.Request
		var at, queue, ttft, total int64
		if err := rows.Scan(&r.ID, &r.Host, &at, &r.API, &r.Client, &r.Conversation, &r.Profile, &r.Model, &r.Effective, &r.Verdict,
			&r.Live, &r.Replay, &r.Stream, &queue, &ttft, &total, &r.Input, &r.Output, &r.CacheRead,
			&r.Cache, &r.Cost, &r.Status, &r.ErrorType, &r.Key, &r.ErrorMessage, &r.Route); err != nil {
			return nil, wrap("read telemetry records", err)
		}
		r.At, r.Queue, r.TTFT, r.Total = time.Unix(0, at), time.Duration(queue), time.Duration(ttft), time.Duration(total)
		out = append(out, r)
	}
	return out, wrap("read telemetry records", rows.Err())
}

func (t telemetry) ByKey(ctx context.Context, since time.Time) ([]store.KeyRequests, error) {
	ctx, cancel := t.s.call(ctx)
	defer cancel()
	rows, err := t.s.query(ctx, `SELECT key_name, count(*),
		CAST(coalesce(sum(CASE WHEN status >= 400 OR status = 0 THEN 1 ELSE 0 END), 0) AS BIGINT),
		CAST(coalesce(sum(input), 0) AS BIGINT), CAST(coalesce(sum(output), 0) AS BIGINT),
		CAST(coalesce(sum(cache_read), 0) AS BIGINT), CAST(coalesce(sum(cache_write), 0) AS BIGINT),
		coalesce(sum(CASE WHEN cost > 0 THEN cost ELSE 0 END), 0), max(at)
		FROM requests WHERE at >= ? GROUP BY key_name ORDER BY key_name`, since.UnixNano())
	if err != nil {
		return nil, wrap("sum telemetry records by key", err)
	}
	defer rows.Close()
	var out []store.KeyRequests
	for rows.Next() {
		var k store.KeyRequests
		var last int64
		if err := rows.Scan(&k.Key, &k.Requests, &k.Errors, &k.Input, &k.Output, &k.CacheRead, &k.Cache, &k.Cost, &last); err != nil {
			return nil, wrap("sum telemetry records by key", err)
		}
		k.Last = time.Unix(0, last)
		out = append(out, k)
	}
	return out, wrap("sum telemetry records by key", rows.Err())
}
