package responses

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// DefaultLogBytes bounds one background response's event log.
const DefaultLogBytes = 8 << 20

// ErrTrimmed is a replay that asks for events the log no longer keeps.
var ErrTrimmed = errors.New("responses: the events asked for are no longer kept")

// EventLog is a background response's events, as SSE frames numbered by
// their sequence numbers from 0, bounded in bytes: when a new event would
// exceed the bound the oldest go. Readers replay from any kept point and
// follow live until the log ends.
type EventLog struct {
	max int
	// sink, when set, hears every frame appended, in order (the mirror
	// that copies the log to the store).
	sink func(frames [][]byte)

	mu      sync.Mutex
	frames  [][]byte
	first   int // sequence number of frames[0]
	bytes   int
	ended   bool
	changed chan struct{} // closed and replaced on every change
}

// NewEventLog returns a log of at most max bytes (DefaultLogBytes if 0).
func NewEventLog(max int) *EventLog {
	if max <= 0 {
		max = DefaultLogBytes
	}
	return &EventLog{max: max, changed: make(chan struct{})}
}

// Append adds the next events, one frame each, in sequence order.
func (l *EventLog) Append(frames ...[]byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, f := range frames {
		l.frames = append(l.frames, f)
		l.bytes += len(f)
	}
	if l.sink != nil {
		l.sink(frames)
	}
	for l.bytes > l.max && len(l.frames) > 1 {
		l.bytes -= len(l.frames[0])
		l.frames[0] = nil
		l.frames = l.frames[1:]
		l.first++
	}
	l.wake()
}

// End marks the log complete: followers return once they have read it.
func (l *EventLog) End() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ended = true
	l.wake()
}

func (l *EventLog) wake() {
	close(l.changed)
	l.changed = make(chan struct{})
}

// Follow writes every event after sequence number after (-1: from the
// start), then new ones as they come, until the log ends or ctx does.
// Each call of write gets the events at hand, in order.
func (l *EventLog) Follow(ctx context.Context, after int, write func(frames [][]byte) error) error {
	next := after + 1
	for {
		l.mu.Lock()
		if next < l.first {
			first := l.first
			l.mu.Unlock()
			return fmt.Errorf("%w: events from %d on are kept, %d was asked for", ErrTrimmed, first, next)
		}
		var batch [][]byte
		if i := next - l.first; i < len(l.frames) {
			batch = append(batch, l.frames[i:]...)
		}
		ended, changed := l.ended, l.changed
		l.mu.Unlock()
		if len(batch) > 0 {
			if err := write(batch); err != nil {
				return err
			}
			next += len(batch)
			continue
		}
		if ended {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Keeps reports whether the log still holds every event after sequence
// number after, so a replay from there is whole.
func (l *EventLog) Keeps(after int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return after+1 >= l.first
}
