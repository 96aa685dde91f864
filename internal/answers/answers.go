// Package answers keeps the answers of completed requests for their
// retries. A client that lost an answer (its read timed out, the
// connection broke at the end) and sends the identical request again gets
// the saved answer instead of a second run that would spend again, or a
// refusal that would leave it unable to go on. Pure bookkeeping: no I/O;
// the caller decides which requests are retries and keys them.
package answers

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"
)

// Limits bound what is kept: for each credential scope, and in all. Without
// a configured key every distinct key a client sends is its own scope, so
// only the totals bound memory.
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

// Answer is a saved answer: the response as it went out.
type Answer struct {
	Status int
	Header map[string][]string
	Body   []byte
	// Calls are the tool calls the answer handed the client; once their
	// results are being accepted the answer is no longer a retry's to have.
	Calls []string

	saved time.Time
	seq   uint64 // the order answers were saved in: the oldest goes first
}

// ErrBusy refuses a duplicate when too many already wait for the same run.
var ErrBusy = errors.New("answers: too many identical requests are waiting for one answer")

// Cache holds saved answers and the runs that will produce them.
type Cache struct {
	mu     sync.Mutex
	lim    Limits
	now    func() time.Time
	scopes map[string]*scope
	// entries and bytes are what every scope keeps together.
	entries int
	bytes   int64
	seq     uint64
}

type scope struct {
	saved   map[string]*Answer
	bytes   int64
	running map[string]*flight
}

// flight is a run in progress that duplicates wait for.
type flight struct {
	done    chan struct{}
	waiters int
	answer  *Answer // what the run answered, saved or not
}

// New returns a cache; now is the clock (nil: time.Now). Totals left
// zero are the per-scope bounds: one scope's worth in all.
func New(lim Limits, now func() time.Time) *Cache {
	if now == nil {
		now = time.Now
	}
	if lim.TotalEntries <= 0 {
		lim.TotalEntries = lim.Entries
	}
	if lim.TotalBytes <= 0 {
		lim.TotalBytes = lim.Bytes
	}
	return &Cache{lim: lim, now: now, scopes: map[string]*scope{}}
}

// Run is the one run of a request that duplicates wait for. Save its
// answer if it has one, then call Done exactly once.
type Run struct {
	c            *Cache
	scope, key   string
	f            *flight
	saved, ended bool
}

// Begin looks up a request by its scope and key. It returns the saved
// answer of an earlier run; or, while an identical request runs, waits for
// that run (abortably) and returns its answer; or makes the caller the
// request's run. A run that ended without an answer lets one waiter run
// instead.
func (c *Cache) Begin(ctx context.Context, scopeKey, key string) (*Answer, *Run, error) {
	for {
		c.mu.Lock()
		s := c.scope(scopeKey)
		if a := c.get(s, key); a != nil {
			c.mu.Unlock()
			return a, nil, nil
		}
		f := s.running[key]
		if f == nil {
			f = &flight{done: make(chan struct{})}
			s.running[key] = f
			c.mu.Unlock()
			return nil, &Run{c: c, scope: scopeKey, key: key, f: f}, nil
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

// Save keeps the run's answer for retries, unless it is larger than an
// answer may be; the duplicates waiting for the run get it either way. To
// make room, the oldest answers go first: the scope's own past its bound,
// then anyone's past the totals. It reports whether the answer was kept.
func (r *Run) Save(a Answer) bool {
	c := r.c
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	a.saved = now
	c.seq++
	a.seq = c.seq
	r.f.answer = &a
	if r.saved || r.ended {
		return false
	}
	size := int64(len(a.Body))
	if len(a.Body) > c.lim.EntryBytes || size > c.lim.Bytes || size > c.lim.TotalBytes {
		return false
	}
	c.sweep(now)
	s := c.scope(r.scope)
	if old := s.saved[r.key]; old != nil {
		c.forget(s, r.key)
	}
	for len(s.saved) > 0 && (len(s.saved) >= c.lim.Entries || s.bytes+size > c.lim.Bytes) {
		c.forget(s, oldest(s))
	}
	for c.entries > 0 && (c.entries >= c.lim.TotalEntries || c.bytes+size > c.lim.TotalBytes) {
		c.forgetOldest()
	}
	if len(s.saved) >= c.lim.Entries || c.entries >= c.lim.TotalEntries {
		return false // bounds of zero keep nothing
	}
	s.saved[r.key] = &a
	s.bytes += size
	c.entries++
	c.bytes += size
	r.saved = true
	return true
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
	s := c.scope(r.scope)
	if s.running[r.key] == r.f {
		delete(s.running, r.key)
	}
	close(r.f.done)
	c.drop(r.scope, s)
}

// Retire forgets the answers that handed the client any of calls: their
// results are being accepted, so the request that asked for them is no
// longer a retry but a new turn.
func (c *Cache) Retire(scopeKey string, calls []string) {
	if len(calls) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.scopes[scopeKey]
	if s == nil {
		return
	}
	for k, a := range s.saved {
		if slices.ContainsFunc(a.Calls, func(id string) bool { return slices.Contains(calls, id) }) {
			c.forget(s, k)
		}
	}
	c.drop(scopeKey, s)
}

// Stats reports what a scope keeps: answers, their bytes, runs in flight.
func (c *Cache) Stats(scopeKey string) (entries int, bytes int64, running int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.scopes[scopeKey]
	if s == nil {
		return 0, 0, 0
	}
	c.sweep(c.now())
	return len(s.saved), s.bytes, len(s.running)
}

// Totals reports what every scope keeps together: scopes, answers and
// their bytes.
func (c *Cache) Totals() (scopes, entries int, bytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sweep(c.now())
	return len(c.scopes), c.entries, c.bytes
}

func (c *Cache) scope(key string) *scope {
	s := c.scopes[key]
	if s == nil {
		s = &scope{saved: map[string]*Answer{}, running: map[string]*flight{}}
		c.scopes[key] = s
	}
	return s
}

// drop forgets a scope that keeps nothing.
func (c *Cache) drop(key string, s *scope) {
	if len(s.saved) == 0 && len(s.running) == 0 {
		delete(c.scopes, key)
	}
}

// get returns a scope's answer for key unless it is gone or expired.
func (c *Cache) get(s *scope, key string) *Answer {
	a := s.saved[key]
	if a == nil {
		return nil
	}
	if c.now().Sub(a.saved) >= c.lim.TTL {
		c.forget(s, key)
		return nil
	}
	return a
}

// forget removes one saved answer.
func (c *Cache) forget(s *scope, key string) {
	a := s.saved[key]
	if a == nil {
		return
	}
	size := int64(len(a.Body))
	delete(s.saved, key)
	s.bytes -= size
	c.entries--
	c.bytes -= size
}

// sweep forgets every expired answer, and the scopes left with nothing:
// a scope that stopped sending expires with its answers.
func (c *Cache) sweep(now time.Time) {
	for sk, s := range c.scopes {
		for k, a := range s.saved {
			if now.Sub(a.saved) >= c.lim.TTL {
				c.forget(s, k)
			}
		}
		c.drop(sk, s)
	}
}

// forgetOldest removes the oldest answer of any scope.
func (c *Cache) forgetOldest() {
	var from *scope
	var key string
	for _, s := range c.scopes {
		if k := oldest(s); k != "" && (from == nil || s.saved[k].seq < from.saved[key].seq) {
			from, key = s, k
		}
	}
	if from != nil {
		c.forget(from, key)
	}
}

// oldest names a scope's oldest answer, "" when it keeps none.
func oldest(s *scope) string {
	var key string
	for k, a := range s.saved {
		if key == "" || a.seq < s.saved[key].seq {
			key = k
		}
	}
	return key
}
