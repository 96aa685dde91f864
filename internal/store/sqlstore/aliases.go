package sqlstore

import (
	"context"

	"github.com/meridian-gw/meridian/internal/store"
)

type aliases struct{ s *DB }

func (a aliases) Put(ctx context.Context, al store.ModelAlias) error {
	ctx, cancel := a.s.call(ctx)
	defer cancel()
	_, err := a.s.exec(ctx, `INSERT INTO model_aliases (name, model, effort, created_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET model = excluded.model, effort = excluded.effort, created_at = excluded.created_at`,
		al.Name, al.Model, al.Effort, ms(al.Created))
	return wrap("keep a model alias", err)
}

func (a aliases) List(ctx context.Context) ([]store.ModelAlias, error) {
	ctx, cancel := a.s.call(ctx)
	defer cancel()
	rows, err := a.s.query(ctx, `SELECT name, model, effort, created_at FROM model_aliases ORDER BY name`)
	if err != nil {
		return nil, wrap("read the model aliases", err)
	}
	defer rows.Close()
	var out []store.ModelAlias
	for rows.Next() {
		var al store.ModelAlias
		var created int64
		if err := rows.Scan(&al.Name, &al.Model, &al.Effort, &created); err != nil {
			return nil, wrap("read the model aliases", err)
		}
		al.Created = fromMS(created)
		out = append(out, al)
	}
	return out, wrap("read the model aliases", rows.Err())
}

func (a aliases) Remove(ctx context.Context, name string) error {
	ctx, cancel := a.s.call(ctx)
	defer cancel()
	n, err := affected(a.s.exec(ctx, `DELETE FROM model_aliases WHERE name = ?`, name))
	if err == nil && n == 0 {
		err = store.ErrNotFound
	}
	return wrap("remove a model alias", err)
}
