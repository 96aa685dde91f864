package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

type starts struct{ s *DB }

func (st starts) Record(ctx context.Context, profile, contract string, options []byte, at time.Time) error {
	ctx, cancel := st.s.call(ctx)
	defer cancel()
	_, err := st.s.exec(ctx, `INSERT INTO start_contracts (profile, contract, options, uses, last_at) VALUES (?, ?, ?, 1, ?)
		ON CONFLICT (profile, contract) DO UPDATE SET options = excluded.options, uses = start_contracts.uses + 1,
		last_at = excluded.last_at`, profile, contract, options, ms(at))
	return wrap("record a start", err)
}

func (st starts) Top(ctx context.Context, profile string, since time.Time) ([]byte, bool, error) {
	ctx, cancel := st.s.call(ctx)
	defer cancel()
	if _, err := st.s.exec(ctx, `DELETE FROM start_contracts WHERE profile = ? AND last_at < ?`, profile, ms(since)); err != nil {
		return nil, false, wrap("forget old starts", err)
	}
	var options []byte
	err := st.s.queryRow(ctx, `SELECT options FROM start_contracts WHERE profile = ?
		ORDER BY uses DESC, last_at DESC, contract LIMIT 1`, profile).Scan(&options)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, wrap("read the most used start", err)
	}
	return options, true, nil
}
