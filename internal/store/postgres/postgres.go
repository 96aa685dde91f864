// Package postgres is the engine for several hosts: every shared record
// in one PostgreSQL database, reached through a pgx connection pool that
// reconnects on its own, migrated at start under an advisory lock, with
// NOTIFY carrying signals between the hosts.
package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/meridian-gw/meridian/internal/store"
	"github.com/meridian-gw/meridian/internal/store/sqlstore"
)

// DefaultPoolSize is how many connections a meridian keeps to PostgreSQL
// at most: a turn makes a few short calls, so this serves dozens of
// concurrent turns, and ten hosts stay well inside the server's default
// max_connections of 100.
const DefaultPoolSize = 8

// Options configure the engine.
type Options struct {
	sqlstore.Options
	// PoolSize bounds the connections (0: DefaultPoolSize).
	PoolSize int
	// ConnectTimeout bounds the first connection at start (0: 10 s).
	ConnectTimeout time.Duration
	Logger         *slog.Logger
}

// IsDSN reports whether s names a PostgreSQL database.
func IsDSN(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// HasPassword reports whether a DSN carries a password itself (visible to
// every local user in the process list when given as a flag), rather
// than leaving it to PGPASSWORD or a password file.
func HasPassword(dsn string) bool {
	u, err := url.Parse(dsn)
	if err != nil {
		return strings.Contains(dsn, ":") && strings.Contains(dsn, "@")
	}
	_, set := u.User.Password()
	return set || u.Query().Has("password")
}

// signalChannel is the one NOTIFY channel the hosts share; a signal's
// payload is its topic, a newline, and its own payload.
const signalChannel = "meridian_signals"

// ledgerLockBase spaces the ledgers' advisory locks apart from others.
const ledgerLockBase int64 = 0x6d65726964100000

// Open connects to the database named by dsn, migrates it and returns
// the store. A server it cannot reach is an error naming its host and
// port (never the password); nothing falls back to SQLite.
func Open(ctx context.Context, dsn string, opts Options) (*store.Store, error) {
	if opts.PoolSize <= 0 {
		opts.PoolSize = DefaultPoolSize
	}
	if opts.ConnectTimeout <= 0 {
		opts.ConnectTimeout = 10 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("--store: not a PostgreSQL DSN meridian can read (postgres://user@host:port/database): %s", redactParse(err))
	}
	where := net.JoinHostPort(cfg.ConnConfig.Host, strconv.Itoa(int(cfg.ConnConfig.Port))) + "/" + cfg.ConnConfig.Database
	cfg.MaxConns = int32(opts.PoolSize)
	cfg.MinConns = 1
	// A connection the server dropped (a restart) is found out before a
	// call uses it: idle ones are checked on the way out of the pool.
	cfg.HealthCheckPeriod = 10 * time.Second
	cfg.ConnConfig.ConnectTimeout = opts.ConnectTimeout

	cctx, cancel := context.WithTimeout(ctx, opts.ConnectTimeout)
	defer cancel()
	conn, err := pgx.ConnectConfig(cctx, cfg.ConnConfig)
	if err != nil {
		return nil, fmt.Errorf("PostgreSQL at %s cannot be reached: %s", where, reason(err))
	}
	err = migrate(ctx, conn)
	_ = conn.Close(context.WithoutCancel(ctx))
	if err != nil {
		return nil, fmt.Errorf("PostgreSQL at %s: %w", where, err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("PostgreSQL at %s: %s", where, reason(err))
	}
	db := stdlib.OpenDBFromPool(pool)
	l := &listener{cfg: cfg.ConnConfig, log: opts.Logger, stop: make(chan struct{})}
	hub := sqlstore.NewHub(func(ctx context.Context, topic, payload string) error {
		_, err := pool.Exec(ctx, `SELECT pg_notify($1, $2)`, signalChannel, topic+"\n"+payload)
		return err
	})
	l.hub = hub
	l.wg.Go(l.run)
	closeFn := func() error {
		l.close()
		err := db.Close()
		pool.Close()
		return err
	}
	return sqlstore.New(db, dialect(), opts.Options, hub, "postgres", where, closeFn), nil
}

// dialect is PostgreSQL's: numbered placeholders, row locks for the rows
// a transaction decides on, and transaction-scoped advisory locks for the
// ledgers whose bounds span rows.
func dialect() sqlstore.Dialect {
	return sqlstore.Dialect{
		Numbered:  true,
		RowID:     "seq",
		ForUpdate: " FOR UPDATE",
		ForShare:  " FOR SHARE",
		LockLedger: func(ctx context.Context, tx *sql.Tx, ledger int64) error {
			_, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, ledgerLockBase+ledger)
			return err
		},
	}
}

// listener hears the shared signal channel on a connection of its own and
// hands what it hears to the hub, reconnecting after a failure.
type listener struct {
	cfg  *pgx.ConnConfig
	hub  *sqlstore.Hub
	log  *slog.Logger
	stop chan struct{}
	once sync.Once
	wg   sync.WaitGroup
}

func (l *listener) run() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-l.stop
		cancel()
	}()
	for ctx.Err() == nil {
		err := l.listen(ctx)
		if ctx.Err() != nil {
			return
		}
		l.log.Warn("store: lost the PostgreSQL signal connection; signals wait for the timers until it is back", "err", reason(err))
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
		}
	}
}

func (l *listener) listen(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	conn, err := pgx.ConnectConfig(cctx, l.cfg)
	cancel()
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	if _, err := conn.Exec(ctx, `LISTEN `+signalChannel); err != nil {
		return err
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		topic, payload, _ := strings.Cut(n.Payload, "\n")
		l.hub.Deliver(topic, payload)
	}
}

func (l *listener) close() {
	l.once.Do(func() { close(l.stop) })
	l.wg.Wait()
}

// reason is a connection error as logs and errors show it: pgx names the
// host, port, user and database, never the password.
func reason(err error) string { return err.Error() }

// redactParse keeps a DSN parse error from echoing the DSN.
func redactParse(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, "cannot parse `"); i >= 0 {
		if j := strings.Index(msg[i+len("cannot parse `"):], "`"); j >= 0 {
			msg = msg[:i] + "cannot parse the DSN" + msg[i+len("cannot parse `")+j+1:]
		}
	}
	return msg
}
