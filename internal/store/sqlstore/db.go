// Package sqlstore implements the store contracts once, over database/sql,
// for both engines: the statements are written in the SQL that SQLite and
// PostgreSQL share, and an engine's Dialect supplies the little that
// differs (placeholders, row locks, ledger locks). The engines open the
// database, migrate it and hand it here.
package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/meridian-gw/meridian/internal/store"
)

// Dialect is what an engine's SQL does its own way.
type Dialect struct {
	// Numbered placeholders ($1, $2, …) instead of ?.
	Numbered bool
	// RowID is the column that orders rows by insertion where a table has
	// no key that does.
	RowID string
	// ForUpdate locks the rows a transaction's SELECT reads, where the
	// engine's transactions do not already exclude each other.
	ForUpdate string
	// ForShare locks a row a statement reads against changes, waiting for
	// one in flight and reading the row as it committed, where the
	// engine's writes do not already exclude each other.
	ForShare string
	// LockLedger serialises the transactions that enforce one bound
	// (the responses' ledger, the saved answers, the journal) across
	// every connection; nil where write transactions already do.
	LockLedger func(ctx context.Context, tx *sql.Tx, ledger int64) error
	// Prepare keeps each statement outside a transaction prepared once,
	// where the engine parses in this process: for SQLite parsing is most
	// of a small statement's CPU (an idle gateway's heartbeat and sweeps).
	// PostgreSQL's driver keeps its own.
	Prepare bool
}

// maxPrepared bounds the statements kept prepared: the store's are a
// fixed set but for lists of n values, whose texts vary with n.
const maxPrepared = 256

// Ledgers a transaction may lock.
const (
	ledgerResponses int64 = 1 + iota
	ledgerAnswers
	ledgerJournal
	ledgerEvents
)

// DefaultCallTimeout bounds one store call: a slow database must not hold
// a request for the pool's whole patience.
const DefaultCallTimeout = 5 * time.Second

// Options configure the bounds the store keeps on its own.
type Options struct {
	// MaxConversations and MaxConsumed bound the conversations and the
	// delivered tool results kept (0: the defaults).
	MaxConversations int
	MaxConsumed      int
	// CallTimeout bounds each call (0: DefaultCallTimeout).
	CallTimeout time.Duration
}

// Defaults for Options.
const (
	DefaultMaxConversations = 10_000
	DefaultMaxConsumed      = 10_000
)

// DB runs the statements of every contract on one database.
type DB struct {
	db      *sql.DB
	d       Dialect
	opts    Options
	signals *Hub

	mu       sync.Mutex
	prepared map[string]*sql.Stmt // by rewritten text; with Dialect.Prepare
}

// New returns the store contracts over db, with hub carrying the
// signals; closeFn releases the engine.
func New(db *sql.DB, d Dialect, opts Options, hub *Hub, engine, where string, closeFn func() error) *store.Store {
	if opts.MaxConversations <= 0 {
		opts.MaxConversations = DefaultMaxConversations
	}
	if opts.MaxConsumed <= 0 {
		opts.MaxConsumed = DefaultMaxConsumed
	}
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = DefaultCallTimeout
	}
	s := &DB{db: db, d: d, opts: opts, signals: hub, prepared: map[string]*sql.Stmt{}}
	return &store.Store{
		Conversations: conversations{s},
		Leases:        leases{s},
		Journal:       journal{s},
		Responses:     responses{s},
		Events:        events{s},
		Answers:       answers{s},
		Telemetry:     telemetry{s},
		Bench:         bench{s},
		Figures:       figures{s},
		Alerts:        alerts{s},
		Starts:        starts{s},
		Keys:          keys{s},
		Aliases:       aliases{s},
		Captures:      captures{s},
		Hosts:         hosts{s},
		Signals:       hub,
		Engine:        engine,
		Where:         where,
		Close:         closeFn,
	}
}

// call bounds one contract call by the call timeout.
func (s *DB) call(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.opts.CallTimeout)
}

// q rewrites a statement for the engine.
func (s *DB) q(query string) string {
	query = strings.ReplaceAll(query, "{rowid}", s.d.RowID)
	query = strings.ReplaceAll(query, "{for_update}", s.d.ForUpdate)
	query = strings.ReplaceAll(query, "{for_share}", s.d.ForShare)
	if !s.d.Numbered {
		return query
	}
	var b strings.Builder
	n := 0
	quoted := false
	for i := 0; i < len(query); i++ {
		c := query[i]
		switch {
		case c == '\'':
			quoted = !quoted
		case c == '?' && !quoted:
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

func (s *DB) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	query = s.q(query)
	if st := s.prepare(ctx, query); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return s.db.ExecContext(ctx, query, args...)
}

func (s *DB) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	query = s.q(query)
	if st := s.prepare(ctx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return s.db.QueryRowContext(ctx, query, args...)
}

func (s *DB) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	query = s.q(query)
	if st := s.prepare(ctx, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return s.db.QueryContext(ctx, query, args...)
}

// prepare returns query's kept statement, preparing it on first use; nil
// when the dialect keeps none, the bound is reached, or it cannot be
// prepared (the unprepared call then reports why).
func (s *DB) prepare(ctx context.Context, query string) *sql.Stmt {
	if !s.d.Prepare {
		return nil
	}
	s.mu.Lock()
	st, ok := s.prepared[query]
	full := len(s.prepared) >= maxPrepared
	s.mu.Unlock()
	if ok || full {
		return st
	}
	st, err := s.db.PrepareContext(ctx, query)
	if err != nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if kept, ok := s.prepared[query]; ok {
		_ = st.Close() // prepared meanwhile by another call
		return kept
	}
	s.prepared[query] = st
	return st
}

// tx runs f in a transaction, committed when f returns nil. ledger > 0
// locks that ledger first.
func (s *DB) tx(ctx context.Context, ledger int64, f func(tx *Tx) error) error {
	sqlTx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = sqlTx.Rollback() }()
	if ledger > 0 && s.d.LockLedger != nil {
		if err := s.d.LockLedger(ctx, sqlTx, ledger); err != nil {
			return err
		}
	}
	if err := f(&Tx{tx: sqlTx, s: s, ctx: ctx}); err != nil {
		return err
	}
	return sqlTx.Commit()
}

// Tx is a transaction with the engine's statements.
type Tx struct {
	tx  *sql.Tx
	s   *DB
	ctx context.Context
}

func (t *Tx) exec(query string, args ...any) (sql.Result, error) {
	return t.tx.ExecContext(t.ctx, t.s.q(query), args...)
}

func (t *Tx) queryRow(query string, args ...any) *sql.Row {
	return t.tx.QueryRowContext(t.ctx, t.s.q(query), args...)
}

func (t *Tx) query(query string, args ...any) (*sql.Rows, error) {
	return t.tx.QueryContext(t.ctx, t.s.q(query), args...)
}

// affected is the rows a statement changed.
func affected(res sql.Result, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// in returns "?, ?, …" for n values.
func in(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

// anys turns strings into statement arguments.
func anys[T any](vs []T) []any {
	out := make([]any, len(vs))
	for i, v := range vs {
		out[i] = v
	}
	return out
}

func ms(t time.Time) int64 { return t.UnixMilli() }

func fromMS(v int64) time.Time { return time.UnixMilli(v) }

// wrap names the failed call; the contracts' own errors pass unchanged.
func wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	for _, own := range []error{store.ErrConflict, store.ErrFenced, store.ErrNotFound, store.ErrFull} {
		if errors.Is(err, own) {
			return err
		}
	}
	return fmt.Errorf("store: %s: %w", what, err)
}
