// Package answers keeps the answers of completed requests for their
// retries. A client that lost an answer (its read timed out, the
// connection broke at the end) and sends the identical request again gets
// the saved answer instead of a second run that would spend again, or a
// refusal that would leave it unable to go on — on whichever host it
// reaches: answers are saved in the store every host shares. Identical
// requests that arrive while one runs wait here for its answer.
package answers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/meridian-gw/meridian/internal/store"
)

// Limits bound what is kept: for each credential scope, and in all. Without
// a configured key every distinct key a client sends is its own scope, so
// only the totals bound the store.
type Limits struct {
	Entries    int           // answers kept for one scope
	Bytes      int64         // their total size
	EntryBytes int           // the largest answer kept
	TTL        time.Duration // how long an answer is kept
	Waiters    int           // duplicates that may wait for one run
	// TotalEntries and TotalBytes bound what every scope keeps together.
	TotalEntries int
	TotalBytes   int64
}

// DefaultLimits are the bounds of the design: 128 answers, 16 MiB, 1 MiB
// each, for 30 minutes, per scope; 512 answers and 64 MiB in all; 16
// waiting duplicates.
func DefaultLimits() Limits {
	return Limits{Entries: 128, Bytes: 16 << 20, EntryBytes: 1 << 20, TTL: 30 * time.Minute, Waiters: 16,
		TotalEntries: 512, TotalBytes: 64 << 20}
}

func (l Limits) stored() store.AnswerLimits {
	return store.AnswerLimits{Entries: l.Entries, Bytes: l.Bytes, EntryBytes: l.EntryBytes, TTL: l.TTL,
		TotalEntries: l.TotalEntries, TotalBytes: l.TotalBytes}
}

// Answer is a saved answer: the response as it went out.
type Answer struct {
	Status int
	Header map[string][]string
	Body   []byte
	// Calls are the tool calls the answer handed the client; once their
	// results are being accepted the answer is no longer a retry's to have.
	Calls []string
}

// ErrBusy refuses a duplicate when too many already wait for the same run.
var ErrBusy = errors.New("answers: too many identical requests are waiting for one answer")

// saveTimeout bounds the write of an answer, which happens after the
// request itself has finished.
const saveTimeout = 10 * time.Second

// Cache holds the runs identical requests wait for, and saves answers in
// the store.
type Cache struct {
	saved store.Answers
	lim   Limits
	now   func() time.Time

	mu      sync.Mutex
	running map[runKey]*flight
}

type runKey struct{ scope, key string }

// flight is a run in progress that duplicates wait for.
type flight struct {
	done    chan struct{}
	waiters int
	answer  *Answer // what the run answered, saved or not
}

// New returns a cache saving into saved; now is the clock (nil:
// time.Now). Totals left zero are the per-scope bounds: one scope's worth
// in all.
func New(saved store.Answers, lim Limits, now func() time.Time) *Cache {
	if now == nil {
		now = time.Now
	}
	if lim.TotalEntries <= 0 {
		lim.TotalEntries = lim.Entries
	}
	if lim.TotalBytes <= 0 {
		lim.TotalBytes = lim.Bytes
	}
	return &Cache{saved: saved, lim: lim, now: now, running: map[runKey]*flight{}}
}

// Limits are the bounds the cache keeps.
func (c *Cache) Limits() Limits { return c.lim }

// Run is the one run of a request that duplicates wait for. Save its
// answer if it has one, then call Done exactly once.
type Run struct {
	c     *Cache
	k     runKey
	f     *flight
	ended bool
}

// Begin looks up a request by its scope and key. While an identical
// request runs here, it waits for that run (abortably) and returns its
// answer; otherwise it returns the saved answer of an earlier run (made
// here or on another host), or makes the caller the request's run. A run
// that ended without an answer lets one waiter run instead.
func (c *Cache) Begin(ctx context.Context, scopeKey, key string) (*Answer, *Run, error) {
	k := runKey{scopeKey, key}
	for {
		c.mu.Lock()
		f := c.running[k]
		if f == nil {
			f = &flight{done: make(chan struct{})}
			c.running[k] = f
			c.mu.Unlock()
			run := &Run{c: c, k: k, f: f}
			a, err := c.load(ctx, k)
			if err != nil || a != nil {
				run.f.answer = a
				run.Done()
				return a, nil, err
			}
			return nil, run, nil
		}
		if f.waiters >= c.lim.Waiters {
			c.mu.Unlock()
			return nil, nil, ErrBusy
		}
		f.waiters++
		c.mu.Unlock()

		select {
		case <-f.done:
		case <-ctx.Done():
		}
		c.mu.Lock()
		f.waiters--
		a := f.answer
		c.mu.Unlock()
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		if a != nil {
			return a, nil, nil
		}
	}
}

// load reads a saved answer; nil when there is none.
func (c *Cache) load(ctx context.Context, k runKey) (*Answer, error) {
	sa, ok, err := c.saved.Get(ctx, k.scope, k.key, c.now())
	if err != nil {
		return nil, fmt.Errorf("saved answers: %w", err)
	}
	if !ok {
		return nil, nil
	}
	a := &Answer{Status: sa.Status, Body: sa.Body, Calls: sa.Calls}
	if err := json.Unmarshal(sa.Header, &a.Header); err != nil {
		return nil, fmt.Errorf("saved answers: header: %w", err)
	}
	return a, nil
}

// Save keeps the run's answer for retries, unless it is larger than an
// answer may be; the duplicates waiting for the run get it either way. To
// make room, the oldest answers go first: the scope's own past its bound,
// then anyone's past the totals. It reports whether the answer was kept;
// an error is a store that could not keep it.
func (r *Run) Save(a Answer) (bool, error) {
	c := r.c
	c.mu.Lock()
	r.f.answer = &a
	ended := r.ended
	c.mu.Unlock()
	if ended {
		return false, nil
	}
	header, err := json.Marshal(a.Header)
	if err != nil {
		return false, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), saveTimeout)
	defer cancel()
	kept, err := c.saved.Put(ctx, store.SavedAnswer{Scope: r.k.scope, Key: r.k.key, Status: a.Status, Header: header, Body: a.Body,
		Calls: a.Calls, Saved: c.now()}, c.lim.stored())
	if err != nil {
		return false, fmt.Errorf("save an answer: %w", err)
	}
	return kept, nil
}

// Found looks for an answer another host saved for the run's request
// while this one waited for it there; found, it is the run's answer, for
// the duplicates waiting here too.
func (r *Run) Found(ctx context.Context) (*Answer, error) {
	a, err := r.c.load(ctx, r.k)
	if err != nil || a == nil {
		return nil, err
	}
	r.c.mu.Lock()
	r.f.answer = a
	r.c.mu.Unlock()
	return a, nil
}

// Done ends the run: its waiters take its answer, or one of them runs.
func (r *Run) Done() {
	c := r.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if r.ended {
		return
	}
	r.ended = true
	if c.running[r.k] == r.f {
		delete(c.running, r.k)
	}
	close(r.f.done)
}

// Retire forgets the answers that handed the client any of calls: their
// results are being accepted, so the request that asked for them is no
// longer a retry but a new turn.
func (c *Cache) Retire(ctx context.Context, scopeKey string, calls []string) error {
	if len(calls) == 0 {
		return nil
	}
	if err := c.saved.Retire(ctx, scopeKey, calls); err != nil {
		return fmt.Errorf("retire saved answers: %w", err)
	}
	return nil
}

// Usage reports what the saved answers hold: in all, and for scopeKey.
func (c *Cache) Usage(ctx context.Context, scopeKey string) (store.AnswerUsage, error) {
	return c.saved.Usage(ctx, scopeKey, c.now())
}

// Running reports the runs identical requests may wait for.
func (c *Cache) Running() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.running)
}
