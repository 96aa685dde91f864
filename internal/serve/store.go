package serve

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/meridian-gw/meridian/internal/apikeys"
	"github.com/meridian-gw/meridian/internal/cluster"
	"github.com/meridian-gw/meridian/internal/store"
	"github.com/meridian-gw/meridian/internal/store/postgres"
	"github.com/meridian-gw/meridian/internal/store/sqlite"
	"github.com/meridian-gw/meridian/internal/store/sqlstore"
)

// Store settings' defaults, for the flags.
const (
	DefaultStorePool    = postgres.DefaultPoolSize
	DefaultStoreTimeout = sqlstore.DefaultCallTimeout
	DefaultHostExpiry   = cluster.DefaultExpiry
)

// stores are what a meridian keeps: the shared store (SQLite in the data
// dir, or PostgreSQL), and the data dir's own SQLite file, which always
// holds the spawns (a spawn is a child process of a local lead).
type stores struct {
	shared *store.Store
	local  *sql.DB
	once   sync.Once
}

func (s *stores) close() {
	s.once.Do(func() {
		_ = s.shared.Close()
		_ = s.local.Close() // already closed when it is the shared store
	})
}

// openStores opens the data dir's SQLite file, and the shared store that
// --store names: empty is that same file; a postgres:// DSN is
// PostgreSQL, reachable or a clear error, never a silent fallback.
func openStores(ctx context.Context, cfg Config, log *slog.Logger) (*stores, error) {
	path := filepath.Join(cfg.DataDir, "meridian.db")
	local, err := sqlite.Open(ctx, path)
	if err != nil {
		return nil, err
	}
	opts := sqlstore.Options{CallTimeout: cfg.StoreTimeout}
	switch {
	case cfg.Store == "":
		return &stores{shared: sqlite.NewStore(local, path, opts), local: local}, nil
	case postgres.IsDSN(cfg.Store):
		if cfg.StoreOnCommandLine && postgres.HasPassword(cfg.Store) {
			log.Warn("--store carries a password, which every local user can read in the process list: " +
				"give it in MERIDIAN_STORE, PGPASSWORD or a pgpass file (PGPASSFILE) instead")
		}
		shared, err := postgres.Open(ctx, cfg.Store, postgres.Options{Options: opts, PoolSize: cfg.StorePool, Logger: log.With("component", "store")})
		if err != nil {
			_ = local.Close()
			return nil, err
		}
		return &stores{shared: shared, local: local}, nil
	}
	_ = local.Close()
	return nil, fmt.Errorf("--store: want nothing (SQLite in the data dir) or a postgres:// DSN")
}

// OpenKeys opens the keys of the store a meridian with this data dir and
// --store shares, for `meridian key`, whether or not one runs; close
// releases the store.
func OpenKeys(ctx context.Context, dataDir, dsn string, log *slog.Logger) (keys *apikeys.Manager, close func(), err error) {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("data dir: %w", err)
	}
	s, err := openStores(ctx, Config{DataDir: dataDir, Store: dsn, StorePool: 2}, log)
	if err != nil {
		return nil, nil, err
	}
	return apikeys.NewManager(s.shared.Keys), s.close, nil
}
