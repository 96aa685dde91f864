// Package sqlitetest opens the SQLite store for other packages' tests, as
// one meridian process opens it, closed when the test ends.
package sqlitetest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/meridian-gw/meridian/internal/store"
	"github.com/meridian-gw/meridian/internal/store/sqlite"
	"github.com/meridian-gw/meridian/internal/store/sqlstore"
)

// Open opens a new store in the test's temp dir.
func Open(tb testing.TB) *store.Store { return OpenIn(tb, tb.TempDir()) }

// OpenIn opens the store of a data dir (meridian.db in it), as a second
// process on the same dir would.
func OpenIn(tb testing.TB, dir string) *store.Store {
	tb.Helper()
	path := filepath.Join(dir, "meridian.db")
	db, err := sqlite.Open(context.Background(), path)
	if err != nil {
		tb.Fatal(err)
	}
	st := sqlite.NewStore(db, path, sqlstore.Options{})
	tb.Cleanup(func() { _ = st.Close() })
	return st
}
