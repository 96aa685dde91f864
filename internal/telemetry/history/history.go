// Package history keeps the telemetry records in the store, one table for
// every host sharing it, each record naming its host. Requests hand their
// record over without waiting: one worker writes them in batches, off the
// request path, and prunes the oldest beyond the age and row bounds. A
// store that cannot take a batch costs the batch (counted), never a
// request's time.
package history

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/meridian-gw/meridian/internal/store"
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
	rows    store.Telemetry
	host    string
	lim     Limits
	log     *slog.Logger
	now     func() time.Time
	in      chan telemetry.Record
	flushes chan chan struct{}
	dropped atomic.Int64 // records the queue had no room for
	lost    atomic.Int64 // records the store refused
	stop    chan struct{}
	wg      sync.WaitGroup
	once    sync.Once
}

// Open starts the history in rows, its records naming host. Zero limits
// are the defaults; now nil is time.Now.
func Open(rows store.Telemetry, host string, lim Limits, log *slog.Logger, now func() time.Time) *History {
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
	h := &History{rows: rows, host: host, lim: lim, log: log, now: now, in: make(chan telemetry.Record, queueSize),
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

// Dropped is how many records were dropped: for a full queue, or a store
// that could not take them.
func (h *History) Dropped() int64 { return h.dropped.Load() + h.lost.Load() }

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
	write := func(within time.Duration) {
		if len(batch) > 0 {
			if err := h.write(batch, within); err != nil {
				h.lost.Add(int64(len(batch)))
				h.log.Warn("could not write telemetry records; they are dropped", "records", len(batch), "err", err)
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
	write(writeTimeout) // a first prune: a restart after a long pause finds old rows
	for {
		select {
		case r := <-h.in:
			batch = append(batch, r)
			if len(batch) >= batchSize {
				write(writeTimeout)
			} else if timer == nil {
				timer = time.After(batchDelay)
			}
		case <-timer:
			write(writeTimeout)
		case done := <-h.flushes:
			drain()
			write(writeTimeout)
			close(done)
		case <-h.stop:
			drain()
			write(closeTimeout)
			return
		}
	}
}

// writeTimeout bounds one batch's write: a slow store holds the writer,
// never a request, and the queue behind it drops what does not fit.
// closeTimeout bounds the last one, so a store that is down does not hold
// a shutdown.
const (
	writeTimeout = 10 * time.Second
	closeTimeout = 2 * time.Second
)

func (h *History) write(batch []telemetry.Record, within time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	rows := make([]store.Request, len(batch))
	for i, r := range batch {
		rows[i] = toRow(h.host, r)
	}
	return h.rows.Insert(ctx, rows)
}

// prune deletes rows older than the age bound, then the oldest beyond the
// row bound.
func (h *History) prune() error {
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	return h.rows.Prune(ctx, h.now().Add(-h.lim.MaxAge), h.lim.MaxRows)
}

func toRow(host string, r telemetry.Record) store.Request {
	return store.Request{Host: host, At: r.Time, API: r.API, Client: r.Client, Conversation: r.Conversation, Profile: r.Profile,
		Model: r.Model, Effective: r.Effective, Verdict: r.Verdict, Key: r.Key, Live: r.Live, Replay: r.Replay, Stream: r.Stream,
		Queue: r.QueueWait, TTFT: r.TTFT, Total: r.Total, Input: r.Tokens.Input, Output: r.Tokens.Output,
		CacheRead: r.Tokens.CacheRead, Cache: r.Tokens.CacheWrite, Cost: r.Cost, Status: r.Status, ErrorType: r.ErrorType, ErrorMessage: r.ErrorMessage, Route: r.Route}
}

func fromRows(rows []store.Request) []telemetry.Record {
	out := make([]telemetry.Record, len(rows))
	for i, r := range rows {
		out[i] = telemetry.Record{ID: r.ID, Host: r.Host, Time: r.At, API: r.API, Client: r.Client, Conversation: r.Conversation,
			Profile: r.Profile, Model: r.Model, Effective: r.Effective, Verdict: r.Verdict, Key: r.Key, Live: r.Live, Replay: r.Replay,
			Stream: r.Stream, QueueWait: r.Queue, TTFT: r.TTFT, Total: r.Total,
			Tokens: telemetry.Tokens{Input: r.Input, Output: r.Output, CacheRead: r.CacheRead, CacheWrite: r.Cache},
			Cost:   r.Cost, Status: r.Status, ErrorType: r.ErrorType, ErrorMessage: r.ErrorMessage, Route: r.Route}
	}
	return out
}

// Filter selects records for a page of the request list.
type Filter = store.RequestFilter

// Page lists up to limit records matching f, newest first, older than the
// record id before (0: from the newest).
func (h *History) Page(ctx context.Context, f Filter, before int64, limit int) ([]telemetry.Record, error) {
	rows, err := h.rows.Page(ctx, f, before, limit)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	return fromRows(rows), nil
}

// Between lists the records that arrived in [from, to), oldest first.
func (h *History) Between(ctx context.Context, from, to time.Time) ([]telemetry.Record, error) {
	rows, err := h.rows.Between(ctx, from, to)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	return fromRows(rows), nil
}

// Cumulative sums everything the history holds and says since when.
func (h *History) Cumulative(ctx context.Context) (telemetry.Totals, time.Time, error) {
	tot, err := h.rows.Totals(ctx)
	if err != nil {
		return telemetry.Totals{}, time.Time{}, fmt.Errorf("history: %w", err)
	}
	return telemetry.Totals{Requests: int(tot.Requests), Errors: int(tot.Errors), Replays: int(tot.Replays),
		Tokens: telemetry.Tokens{Input: tot.Input, Output: tot.Output, CacheRead: tot.CacheRead, CacheWrite: tot.Cache},
		Cost:   tot.Cost, Unpriced: int(tot.Unpriced)}, tot.Since, nil
}

// ByHost counts the records kept per host, API and status.
func (h *History) ByHost(ctx context.Context) ([]store.HostRequests, error) {
	rows, err := h.rows.ByHost(ctx)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	return rows, nil
}

// ByKey sums the records since a time per API key.
func (h *History) ByKey(ctx context.Context, since time.Time) ([]store.KeyRequests, error) {
	rows, err := h.rows.ByKey(ctx, since)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	return rows, nil
}
