package sqlite

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/meridian-gw/meridian/internal/store"
	"github.com/meridian-gw/meridian/internal/store/sqlstore"
	"github.com/meridian-gw/meridian/internal/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Engine{New: func(t *testing.T, maxConversations, maxConsumed int) (*store.Store, func() *store.Store) {
		path := filepath.Join(t.TempDir(), "meridian.db")
		opts := sqlstore.Options{MaxConversations: maxConversations, MaxConsumed: maxConsumed}
		open := func() *store.Store {
			db, err := Open(context.Background(), path)
			if err != nil {
				t.Fatal(err)
			}
			s := NewStore(db, path, opts)
			t.Cleanup(func() { _ = s.Close() })
			return s
		}
		return open(), open
	}})
}
