// Package admission bounds how many backend processes run at once. Waiters
// queue in arrival order, leave the queue when their request goes away, and
// give up after a bounded wait.
package admission

import (
	"context"
	"errors"
	"sync"
	"time"
)

// ErrTimeout is returned when no slot freed up within the wait bound.
var ErrTimeout = errors.New("admission: no slot became free in time")

// Limiter is a FIFO semaphore with a bounded wait.
type Limiter struct {
	mu      sync.Mutex
	size    int
	used    int
	waiters []*waiter // FIFO
	maxWait time.Duration
}

type waiter struct {
	ready chan struct{} // closed when the slot is handed over
}

// New returns a limiter of size slots whose waiters give up after maxWait.
func New(size int, maxWait time.Duration) *Limiter {
	return &Limiter{size: max(size, 1), maxWait: maxWait}
}

// Acquire takes a slot, waiting in line if none is free. It returns
// ctx.Err() if the caller goes away and ErrTimeout after the wait bound.
// The returned function releases the slot; call it exactly once.
func (l *Limiter) Acquire(ctx context.Context) (release func(), err error) {
	l.mu.Lock()
	if l.used < l.size && len(l.waiters) == 0 {
		l.used++
		l.mu.Unlock()
		return l.releaser(), nil
	}
	w := &waiter{ready: make(chan struct{})}
	l.waiters = append(l.waiters, w)
	l.mu.Unlock()

	timer := time.NewTimer(l.maxWait)
	defer timer.Stop()
	select {
	case <-w.ready:
		return l.releaser(), nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-timer.C:
		err = ErrTimeout
	}
	if l.leave(w) {
		return nil, err
	}
	// The slot was handed over while we were leaving: give it back.
	l.releaser()()
	return nil, err
}

// leave removes w from the queue; false means it was already granted.
func (l *Limiter) leave(w *waiter) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, q := range l.waiters {
		if q == w {
			l.waiters = append(l.waiters[:i], l.waiters[i+1:]...)
			return true
		}
	}
	return false
}

func (l *Limiter) releaser() func() {
	var once sync.Once
	return func() { once.Do(l.release) }
}

func (l *Limiter) release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.waiters) > 0 {
		// Hand the slot straight to the next waiter; used stays the same.
		w := l.waiters[0]
		l.waiters = l.waiters[1:]
		close(w.ready)
		return
	}
	l.used--
}

// Stats reports slots in use and requests waiting.
func (l *Limiter) Stats() (inUse, waiting, size int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.used, len(l.waiters), l.size
}
