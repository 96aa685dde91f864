package responses

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Signal topics: a background response's log grew or ended; a cancel was
// asked for. The payload is the response's id.
const (
	topicEvents = "events"
	topicCancel = "cancel"
)

// mirror copies a running job's event log to the store, off the job's
// path, so another host can replay and follow it. Frames are written in
// batches, in order and without gaps: a batch the store refused is tried
// again with the next; when the store stays away for a log's worth of
// frames, the copy stops where it was and ends there.
type mirror struct {
	s   *Store
	id  string
	max int
	log *slog.Logger

	mu      sync.Mutex
	pending [][]byte
	bytes   int
	next    int // the sequence number of pending[0]
	broken  bool
	closed  bool
	kick    chan struct{}
	done    chan struct{}
}

// mirrorBatch spaces the writes of a busy log: a follower elsewhere lags
// by about this much.
const mirrorBatch = 20 * time.Millisecond

func newMirror(s *Store, id string, max int, log *slog.Logger) *mirror {
	m := &mirror{s: s, id: id, max: max, log: log, kick: make(chan struct{}, 1), done: make(chan struct{})}
	go m.run()
	return m
}

// add queues frames; it never blocks the job.
func (m *mirror) add(frames [][]byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.broken {
		return
	}
	for _, f := range frames {
		m.pending = append(m.pending, f)
		m.bytes += len(f)
	}
	if m.bytes > m.max {
		m.broken = true
		m.pending, m.bytes = nil, 0
	}
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

func (m *mirror) run() {
	defer close(m.done)
	for {
		<-m.kick
		m.mu.Lock()
		closed := m.closed
		m.mu.Unlock()
		m.flush()
		if closed {
			m.end()
			return
		}
		time.Sleep(mirrorBatch)
	}
}

// flush writes what is pending.
func (m *mirror) flush() {
	m.mu.Lock()
	batch, seq := m.pending, m.next
	m.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := m.s.events.Append(ctx, m.id, seq, batch, m.max); err != nil {
		m.log.Warn("store: could not copy a background response's events; trying again with the next", "response", m.id, "err", err)
		return
	}
	m.mu.Lock()
	n := 0
	for _, f := range batch {
		n += len(f)
	}
	if !m.broken {
		m.pending, m.bytes, m.next = m.pending[len(batch):], m.bytes-n, seq+len(batch)
	}
	m.mu.Unlock()
	_ = m.s.signals.Notify(ctx, topicEvents, m.id)
}

func (m *mirror) end() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := m.s.events.End(ctx, m.id); err != nil {
		m.log.Warn("store: could not end a background response's copied events", "response", m.id, "err", err)
	}
	_ = m.s.signals.Notify(ctx, topicEvents, m.id)
}

// close writes the rest and ends the stored log, waiting at most wait.
func (m *mirror) close(wait time.Duration) {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	select {
	case m.kick <- struct{}{}:
	default:
	}
	select {
	case <-m.done:
	case <-time.After(wait):
		m.log.Warn("store: gave up waiting for a background response's events to be copied", "response", m.id)
	}
}
