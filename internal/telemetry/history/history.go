// Package history keeps the telemetry records in the data dir's SQLite
// database. Requests hand their record over without waiting: one worker
// writes them in batches, off the request path, and prunes the oldest
// beyond the age and row bounds.
package history

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/meridian-gw/meridian/internal/telemetry"
)

// Defaults for Limits.
const (
	DefaultMaxAge  = 30 * 24 * time.Hour
	DefaultMaxRows = 200_000
)

// Limits bound what the history keeps; the oldest rows go first.
type Limits struct {
	MaxAge  time.Duration
	MaxRows int
}

// Batching: a batch is written when this many records wait, or this long
// after the first of them arrived.
const (
	batchSize  = 256
	batchDelay = 500 * time.Millisecond
	// queueSize records may wait; beyond it records are dropped (and
	// counted) rather than slowing a request down.
	queueSize = 4096
	// pruneEvery spaces the pruning passes.
	pruneEvery = time.Minute
)

// History is the stored telemetry.
type History struct {
	db      *sql.DB
	lim     Limits
	log     *slog.Logger
	now     func() time.Time
	in      chan telemetry.Record
	flushes chan chan struct{}
	dropped atomic.Int64
	stop    chan struct{}
	wg      sync.WaitGroup
	once    sync.Once
}

// Open starts the history on db (its table comes with the store's
// migrations). Zero limits are the defaults; now nil is time.Now.
func Open(db *sql.DB, lim Limits, log *slog.Logger, now func() time.Time) *History {
	if lim.MaxAge <= 0 {
		lim.MaxAge = DefaultMaxAge
	}
	if lim.MaxRows <= 0 {
		lim.MaxRows = DefaultMaxRows
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if now == nil {
		now = time.Now
	}
	h := &History{db: db, lim: lim, log: log, now: now, in: make(chan telemetry.Record, queueSize),
		flushes: make(chan chan struct{}), stop: make(chan struct{})}
	h.wg.Go(h.run)
	return h
}

// Add hands a record over for writing. It never blocks: when the writer
// is that far behind, the record is dropped and counted.
func (h *History) Add(r telemetry.Record) {
	select {
	case h.in <- r:
	default:
		h.dropped.Add(1)
	}
}

// Dropped is how many records were dropped for a full queue.
func (h *History) Dropped() int64 { return h.dropped.Load() }

// Flush returns once every record added before it is written.
func (h *History) Flush(ctx context.Context) error {
	done := make(chan struct{})
	select {
	case h.flushes <- done:
	case <-h.stop:
		return errors.New("history: closed")
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close writes what waits and stops the writer.
func (h *History) Close() {
	h.once.Do(func() { close(h.stop) })
	h.wg.Wait()
}

func (h *History) run() {
	var batch []telemetry.Record
	var timer <-chan time.Time
	lastPrune := time.Time{}
	write := func() {
		if len(batch) > 0 {
			if err := h.write(batch); err != nil {
				h.log.Warn("could not write telemetry records", "records", len(batch), "err", err)
			}
			batch, timer = batch[:0], nil
		}
		if now := h.now(); now.Sub(lastPrune) >= pruneEvery {
			lastPrune = now
			if err := h.prune(); err != nil {
				h.log.Warn("could not prune telemetry records", "err", err)
			}
		}
	}
	drain := func() {
		for {
			select {
			case r := <-h.in:
				batch = append(batch, r)
			default:
				return
			}
		}
	}
	write() // a first prune: a restart after a long pause finds old rows
	for {
		select {
		case r := <-h.in:
			batch = append(batch, r)
			if len(batch) >= batchSize {
				write()
			} else if timer == nil {
				timer = time.After(batchDelay)
			}
		case <-timer:
			write()
		case done := <-h.flushes:
			drain()
			write()
			close(done)
		case <-h.stop:
			drain()
			write()
			return
		}
	}
}

const columns = `at, api, client, conversation, profile, model, effective, verdict, live, replay, stream,
	queue_ns, ttft_ns, total_ns, input, output, cache_read, cache_write, cost, status, error_type`

func (h *History) write(batch []telemetry.Record) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tx, err := h.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO requests (`+columns+`) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`)
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	defer stmt.Close()
	for _, r := range batch {
		if _, err := stmt.ExecContext(ctx, r.Time.UnixNano(), r.API, r.Client, r.Conversation, r.Profile, r.Model, r.Effective,
			r.Verdict, r.Live, r.Replay, r.Stream, int64(r.QueueWait), int64(r.TTFT), int64(r.Total),
			r.Tokens.Input, r.Tokens.Output, r.Tokens.CacheRead, r.Tokens.CacheWrite, r.Cost, r.Status, r.ErrorType); err != nil {
			return fmt.Errorf("history: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("history: %w", err)
	}
	return nil
}

// prune deletes rows older than the age bound, then the oldest beyond the
// row bound.
func (h *History) prune() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := h.db.ExecContext(ctx, `DELETE FROM requests WHERE at < ?`, h.now().Add(-h.lim.MaxAge).UnixNano()); err != nil {
		return fmt.Errorf("history prune: %w", err)
	}
	if _, err := h.db.ExecContext(ctx, `DELETE FROM requests WHERE id <= (SELECT id FROM requests ORDER BY id DESC LIMIT 1 OFFSET ?)`, h.lim.MaxRows); err != nil {
		return fmt.Errorf("history prune: %w", err)
	}
	return nil
}

// Filter selects records for a page of the request list.
type Filter struct {
	API, Client, Model, Verdict string
	// Status is "ok", "error" or an HTTP status code.
	Status string
	// MissedCache keeps only continuations that read nothing from the
	// cache (telemetry.MissedCache).
	MissedCache bool
}

func (f Filter) where() (string, []any) {
	var conds []string
	var args []any
	add := func(cond string, v ...any) { conds = append(conds, cond); args = append(args, v...) }
	if f.API != "" {
		add("api = ?", f.API)
	}
	if f.Client != "" {
		add("client = ?", f.Client)
	}
	if f.Model != "" {
		add("(model = ? OR effective = ?)", f.Model, f.Model)
	}
	if f.Verdict != "" {
		add("verdict = ?", f.Verdict)
	}
	switch f.Status {
	case "":
	case "ok":
		add("status BETWEEN 200 AND 399")
	case "error":
		add("(status >= 400 OR status = 0)")
	default:
		add("status = ?", f.Status)
	}
	if f.MissedCache {
		add("verdict = 'continuation' AND status = 200 AND replay = 0 AND cache_read = 0")
	}
	if len(conds) == 0 {
		return "", nil
	}
	return " AND " + strings.Join(conds, " AND "), args
}

// Page lists up to limit records matching f, newest first, older than the
// record id before (0: from the newest).
func (h *History) Page(ctx context.Context, f Filter, before int64, limit int) ([]telemetry.Record, error) {
	where, args := f.where()
	if before <= 0 {
		before = 1<<63 - 1
	}
	return h.query(ctx, `SELECT id, `+columns+` FROM requests WHERE id < ?`+where+` ORDER BY id DESC LIMIT ?`,
		append(append([]any{before}, args...), limit)...)
}

// Between lists the records that arrived in [from, to), oldest first.
func (h *History) Between(ctx context.Context, from, to time.Time) ([]telemetry.Record, error) {
	return h.query(ctx, `SELECT id, `+columns+` FROM requests WHERE at >= ? AND at < ? ORDER BY id`, from.UnixNano(), to.UnixNano())
}

// Cumulative sums everything the history holds and says since when.
func (h *History) Cumulative(ctx context.Context) (telemetry.Totals, time.Time, error) {
	var t telemetry.Totals
	var since sql.NullInt64
	err := h.db.QueryRowContext(ctx, `SELECT COUNT(*),
		COALESCE(SUM(status >= 400 OR status = 0), 0), COALESCE(SUM(replay), 0),
		COALESCE(SUM(input), 0), COALESCE(SUM(output), 0), COALESCE(SUM(cache_read), 0), COALESCE(SUM(cache_write), 0),
		COALESCE(SUM(CASE WHEN cost > 0 THEN cost ELSE 0 END), 0), COALESCE(SUM(cost < 0), 0), MIN(at) FROM requests`).Scan(
		&t.Requests, &t.Errors, &t.Replays, &t.Tokens.Input, &t.Tokens.Output, &t.Tokens.CacheRead, &t.Tokens.CacheWrite,
		&t.Cost, &t.Unpriced, &since)
	if err != nil {
		return t, time.Time{}, fmt.Errorf("history: %w", err)
	}
	if !since.Valid {
		return t, time.Time{}, nil
	}
	return t, time.Unix(0, since.Int64), nil
}

func (h *History) query(ctx context.Context, q string, args ...any) ([]telemetry.Record, error) {
	rows, err := h.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	defer rows.Close()
	var out []telemetry.Record
	for rows.Next() {
		var r telemetry.Record
		var at, queue, ttft, total int64
		if err := rows.Scan(&r.ID, &at, &r.API, &r.Client, &r.Conversation, &r.Profile, &r.Model, &r.Effective, &r.Verdict,
			&r.Live, &r.Replay, &r.Stream, &queue, &ttft, &total, &r.Tokens.Input, &r.Tokens.Output, &r.Tokens.CacheRead,
			&r.Tokens.CacheWrite, &r.Cost, &r.Status, &r.ErrorType); err != nil {
			return nil, fmt.Errorf("history: %w", err)
		}
		r.Time, r.QueueWait, r.TTFT, r.Total = time.Unix(0, at), time.Duration(queue), time.Duration(ttft), time.Duration(total)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	return out, nil
}
