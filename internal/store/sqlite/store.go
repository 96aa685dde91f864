package sqlite

import (
	"database/sql"

	"github.com/meridian-gw/meridian/internal/store"
	"github.com/meridian-gw/meridian/internal/store/sqlstore"
)

// dialect is SQLite's: ? placeholders, write transactions that take the
// database's one write lock as they begin (Open's _txlock), so they
// exclude each other without row or ledger locks, and statements kept
// prepared, as the engine parses them in this process.
func dialect() sqlstore.Dialect { return sqlstore.Dialect{RowID: "rowid", Prepare: true} }

// NewStore returns the store contracts over a database Open returned,
// named by its path for status. Signals reach only this process's
// listeners; other processes sharing the file hear of changes when they
// look again on their timers. Closing the store closes db.
func NewStore(db *sql.DB, path string, opts sqlstore.Options) *store.Store {
	return sqlstore.New(db, dialect(), opts, sqlstore.NewHub(nil), "sqlite", path, db.Close)
}
