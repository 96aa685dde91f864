// Package inspector keeps the requests captured for the request inspector
// in the store every host shares, and reads them back for its page, its
// JSON and `meridian requests export`. Requests hand their capture over
// without waiting: one worker redacts and writes them off the request
// path, and prunes them past the age and byte bounds.
package inspector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/meridian-gw/meridian/internal/capture"
	"github.com/meridian-gw/meridian/internal/store"
	"github.com/meridian-gw/meridian/internal/telemetry"
)

// Defaults for the bounds.
const (
	DefaultMaxAge   = 72 * time.Hour
	DefaultMaxBytes = 256 << 20
)

// queueSize captures may wait for the writer (each up to three parts of
// capture.MaxPart); beyond it they are dropped and counted.
const queueSize = 64

// pruneEvery spaces the pruning passes.
const pruneEvery = time.Minute

// Config is where captures go and how long they stay.
type Config struct {
	Store    store.Captures
	Host     string
	MaxAge   time.Duration // 0: DefaultMaxAge
	MaxBytes int64         // 0: DefaultMaxBytes
	// Redactor removes secrets before anything is kept.
	Redactor *capture.Redactor
	Logger   *slog.Logger
}

type item struct {
	draft *capture.Draft
	rec   telemetry.Record
}

// Inspector keeps and reads the captures.
type Inspector struct {
	cfg     Config
	in      chan item
	dropped atomic.Int64
	stop    chan struct{}
	wg      sync.WaitGroup
	once    sync.Once
}

// Open starts the writer.
func Open(cfg Config) *Inspector {
	if cfg.MaxAge <= 0 {
		cfg.MaxAge = DefaultMaxAge
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Redactor == nil {
		cfg.Redactor = capture.NewRedactor()
	}
	in := &Inspector{cfg: cfg, in: make(chan item, queueSize), stop: make(chan struct{})}
	in.wg.Go(in.run)
	return in
}

// Keep hands a finished request over. It never blocks.
func (in *Inspector) Keep(d *capture.Draft, rec telemetry.Record) {
	if in == nil || d.Mode() == capture.Off {
		return
	}
	select {
	case in.in <- item{d, rec}:
	default:
		in.dropped.Add(1)
	}
}

// Dropped counts the captures the writer had no room or store for.
func (in *Inspector) Dropped() int64 { return in.dropped.Load() }

// Close writes what waits and stops the writer.
func (in *Inspector) Close() {
	if in == nil {
		return
	}
	in.once.Do(func() { close(in.stop) })
	in.wg.Wait()
}

func (in *Inspector) run() {
	prune := time.NewTicker(pruneEvery)
	defer prune.Stop()
	in.prune()
	for {
		select {
		case it := <-in.in:
			in.write(it)
		case <-prune.C:
			in.prune()
		case <-in.stop:
			for {
				select {
				case it := <-in.in:
					in.write(it)
				default:
					return
				}
			}
		}
	}
}

func (in *Inspector) write(it item) {
	c, ok := it.draft.Finish(it.rec, in.cfg.Redactor)
	if !ok {
		return
	}
	row, err := Row(c, in.cfg.Host)
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err = in.cfg.Store.Insert(ctx, row)
		cancel()
	}
	if err != nil {
		in.dropped.Add(1)
		in.cfg.Logger.Warn("could not keep a request's capture; it is dropped", "err", err)
	}
}

func (in *Inspector) prune() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := in.cfg.Store.Prune(ctx, time.Now().Add(-in.cfg.MaxAge), in.cfg.MaxBytes); err != nil {
		in.cfg.Logger.Warn("could not prune the captures", "err", err)
	}
}

// meta is what a capture keeps beside its parts.
type meta struct {
	Mode         string            `json:"mode"`
	Record       telemetry.Record  `json:"record"`
	Headers      map[string]string `json:"headers"`
	RequestBytes int64             `json:"request_bytes"`
	AnswerBytes  int64             `json:"answer_bytes"`
	Cut          []string          `json:"cut,omitempty"`
}

// Row is a capture as the store keeps it.
func Row(c capture.Capture, host string) (store.Capture, error) {
	m, err := json.Marshal(meta{Mode: c.Mode, Record: c.Record, Headers: c.Headers, RequestBytes: c.RequestBytes, AnswerBytes: c.AnswerBytes, Cut: c.Cut})
	if err != nil {
		return store.Capture{}, fmt.Errorf("encode a capture: %w", err)
	}
	var written []byte
	if len(c.Written) > 0 {
		if written, err = json.Marshal(c.Written); err != nil {
			return store.Capture{}, fmt.Errorf("encode a capture: %w", err)
		}
	}
	r := c.Record
	return store.Capture{At: r.Time, Host: host, Key: r.Key, API: r.API, Model: r.Model, Status: r.Status, Meta: m,
		Request: c.Request, Written: written, Answer: []byte(c.Answer),
		Size: int64(len(m) + len(c.Request) + len(written) + len(c.Answer))}, nil
}

// Entry is one capture as the page, the JSON and the export show it.
type Entry struct {
	ID   int64  `json:"id"`
	Host string `json:"host"`
	capture.Capture
}

// entry reads a stored capture back.
func entry(row store.Capture) (Entry, error) {
	var m meta
	if err := json.Unmarshal(row.Meta, &m); err != nil {
		return Entry{}, fmt.Errorf("read capture %d: %w", row.ID, err)
	}
	e := Entry{ID: row.ID, Host: row.Host, Capture: capture.Capture{Mode: m.Mode, Record: m.Record, Headers: m.Headers,
		RequestBytes: m.RequestBytes, AnswerBytes: m.AnswerBytes, Cut: m.Cut, Answer: string(row.Answer)}}
	e.Record.Host = row.Host
	if len(row.Request) > 0 {
		e.Request = row.Request
	}
	if len(row.Written) > 0 {
		if err := json.Unmarshal(row.Written, &e.Written); err != nil {
			return Entry{}, fmt.Errorf("read capture %d: %w", row.ID, err)
		}
	}
	return e, nil
}

// Filter narrows a list: the store's, by key, API, model, host and
// outcome.
type Filter = store.CaptureFilter

// List reads up to limit captures matching f, newest first, with ids below
// before (0: the newest), without their parts.
func List(ctx context.Context, st store.Captures, f Filter, before int64, limit int) ([]Entry, error) {
	rows, err := st.Page(ctx, f, before, limit)
	if err != nil {
		return nil, err
	}
	out := make([]Entry, 0, len(rows))
	for _, r := range rows {
		e, err := entry(r)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// Get reads one capture whole; found is false when there is none (or
// it was pruned).
func Get(ctx context.Context, st store.Captures, id int64) (e Entry, found bool, err error) {
	row, err := st.Get(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return Entry{}, false, nil
	}
	if err != nil {
		return Entry{}, false, err
	}
	e, err = entry(row)
	return e, err == nil, err
}

// Export writes every capture since a time as JSON lines, oldest first,
// and returns how many it wrote.
func Export(ctx context.Context, st store.Captures, since time.Time, w io.Writer) (int, error) {
	enc := json.NewEncoder(w)
	n := 0
	var after int64
	for {
		rows, err := st.Since(ctx, since, after, 100)
		if err != nil {
			return n, err
		}
		for _, r := range rows {
			e, err := entry(r)
			if err != nil {
				return n, err
			}
			if err := enc.Encode(e); err != nil {
				return n, fmt.Errorf("write the export: %w", err)
			}
			n++
			after = r.ID
		}
		if len(rows) < 100 {
			return n, nil
		}
	}
}

// List reads this inspector's captures (see List).
func (in *Inspector) List(ctx context.Context, f Filter, before int64, limit int) ([]Entry, error) {
	return List(ctx, in.cfg.Store, f, before, limit)
}

// Get reads one of this inspector's captures whole.
func (in *Inspector) Get(ctx context.Context, id int64) (Entry, bool, error) {
	return Get(ctx, in.cfg.Store, id)
}

// Bounds are how long and how many bytes of captures are kept.
func (in *Inspector) Bounds() (maxAge time.Duration, maxBytes int64) {
	return in.cfg.MaxAge, in.cfg.MaxBytes
}
