package sqlstore

import (
	"context"
	"database/sql"
	"errors"

	"github.com/meridian-gw/meridian/internal/store"
)

type events struct{ s *DB }

func (e events) Append(ctx context.Context, id string, seq int, frames [][]byte, maxBytes int) error {
	ctx, cancel := e.s.call(ctx)
	defer cancel()
	if len(frames) == 0 {
		_, err := e.s.exec(ctx, `INSERT INTO response_logs (id, kept, bytes, ended) VALUES (?, ?, 0, FALSE) ON CONFLICT (id) DO NOTHING`, id, seq)
		return wrap("begin an event log", err)
	}
	return wrap("append to an event log", e.s.tx(ctx, 0, func(tx *Tx) error {
		added := 0
		for i, f := range frames {
			if _, err := tx.exec(`INSERT INTO response_events (id, seq, frame) VALUES (?, ?, ?)`, id, seq+i, f); err != nil {
				return err
			}
			added += len(f)
		}
		if _, err := tx.exec(`INSERT INTO response_logs (id, kept, bytes, ended) VALUES (?, ?, ?, FALSE)
			ON CONFLICT (id) DO UPDATE SET bytes = response_logs.bytes + excluded.bytes`, id, seq, added); err != nil {
			return err
		}
		var kept int
		var bytes int64
		if err := tx.queryRow(`SELECT kept, bytes FROM response_logs WHERE id = ?{for_update}`, id).Scan(&kept, &bytes); err != nil {
			return err
		}
		if bytes <= int64(maxBytes) {
			return nil
		}
		// Trim the oldest frames, keeping at least the last.
		last := seq + len(frames) - 1
		rows, err := tx.query(`SELECT seq, length(frame) FROM response_events WHERE id = ? AND seq < ? ORDER BY seq`, id, last)
		if err != nil {
			return err
		}
		upTo := kept - 1
		for bytes > int64(maxBytes) && rows.Next() {
			var s int
			var n int64
			if err := rows.Scan(&s, &n); err != nil {
				rows.Close()
				return err
			}
			upTo, bytes = s, bytes-n
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if _, err := tx.exec(`DELETE FROM response_events WHERE id = ? AND seq <= ?`, id, upTo); err != nil {
			return err
		}
		_, err = tx.exec(`UPDATE response_logs SET kept = ?, bytes = ? WHERE id = ?`, upTo+1, bytes, id)
		return err
	}))
}

func (e events) End(ctx context.Context, id string) error {
	ctx, cancel := e.s.call(ctx)
	defer cancel()
	_, err := e.s.exec(ctx, `INSERT INTO response_logs (id, kept, bytes, ended) VALUES (?, 0, 0, TRUE)
		ON CONFLICT (id) DO UPDATE SET ended = TRUE`, id)
	return wrap("end an event log", err)
}

// Read needs no transaction: frames trimmed between its two statements
// show as a First past after+1, which the reader takes for a trimmed log.
func (e events) Read(ctx context.Context, id string, after, limit int) (store.EventLog, error) {
	ctx, cancel := e.s.call(ctx)
	defer cancel()
	var log store.EventLog
	err := e.s.queryRow(ctx, `SELECT kept, ended FROM response_logs WHERE id = ?`, id).Scan(&log.Kept, &log.Ended)
	if errors.Is(err, sql.ErrNoRows) {
		return log, store.ErrNotFound
	}
	if err != nil {
		return log, wrap("read an event log", err)
	}
	log.First = max(after+1, log.Kept)
	rows, err := e.s.query(ctx, `SELECT seq, frame FROM response_events WHERE id = ? AND seq > ? ORDER BY seq LIMIT ?`, id, after, limit)
	if err != nil {
		return log, wrap("read an event log", err)
	}
	defer rows.Close()
	for rows.Next() {
		var s int
		var f []byte
		if err := rows.Scan(&s, &f); err != nil {
			return log, wrap("read an event log", err)
		}
		if len(log.Frames) == 0 {
			log.First = s
		}
		log.Frames = append(log.Frames, f)
	}
	return log, wrap("read an event log", rows.Err())
}

func (e events) Drop(ctx context.Context, id string) error {
	ctx, cancel := e.s.call(ctx)
	defer cancel()
	return wrap("drop an event log", e.s.tx(ctx, 0, func(tx *Tx) error { return dropLog(tx, id) }))
}

func dropLog(tx *Tx, id string) error {
	if _, err := tx.exec(`DELETE FROM response_events WHERE id = ?`, id); err != nil {
		return err
	}
	_, err := tx.exec(`DELETE FROM response_logs WHERE id = ?`, id)
	return err
}
