package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/meridian-gw/meridian/internal/store"
)

type journal struct{ s *DB }

func (j journal) Begin(ctx context.Context, e store.JournalEntry, expired time.Time, max int) (*store.JournalEntry, error) {
	ctx, cancel := j.s.call(ctx)
	defer cancel()
	var existing *store.JournalEntry
	err := j.s.tx(ctx, ledgerJournal, func(tx *Tx) error {
		if _, err := tx.exec(`DELETE FROM unfinished_requests WHERE started_at <= ?`, ms(expired)); err != nil {
			return err
		}
		var held store.JournalEntry
		var started int64
		err := tx.queryRow(`SELECT host, incarnation, started_at FROM unfinished_requests WHERE hash = ?`, e.Hash).
			Scan(&held.Owner.Host, &held.Owner.Incarnation, &started)
		switch {
		case err == nil:
			held.Hash, held.Started = e.Hash, fromMS(started)
			existing = &held
			return nil
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		var n int
		if err := tx.queryRow(`SELECT count(*) FROM unfinished_requests`).Scan(&n); err != nil {
			return err
		}
		if n >= max {
			return store.ErrFull
		}
		_, err = tx.exec(`INSERT INTO unfinished_requests (hash, host, incarnation, started_at) VALUES (?, ?, ?, ?)`,
			e.Hash, e.Owner.Host, e.Owner.Incarnation, ms(e.Started))
		return err
	})
	if err != nil {
		return nil, wrap("journal a request", err)
	}
	return existing, nil
}

func (j journal) End(ctx context.Context, hash string, owner store.Owner) error {
	ctx, cancel := j.s.call(ctx)
	defer cancel()
	_, err := j.s.exec(ctx, `DELETE FROM unfinished_requests WHERE hash = ? AND host = ? AND incarnation = ?`, hash, owner.Host, owner.Incarnation)
	return wrap("clear a request from the journal", err)
}
