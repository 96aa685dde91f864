package sqlstore

import (
	"context"
	"sync"
)

// Hub hands signals to this process's listeners. An engine whose database
// carries signals between processes (PostgreSQL's NOTIFY) sends through
// it with Send and delivers what it hears with Deliver; otherwise Notify
// delivers here directly.
type Hub struct {
	// Send, when set, carries a signal to every process sharing the
	// database, this one included.
	Send func(ctx context.Context, topic, payload string) error

	mu        sync.Mutex
	listeners map[string]map[chan string]struct{}
}

// NewHub returns a hub; send nil delivers within this process only.
func NewHub(send func(ctx context.Context, topic, payload string) error) *Hub {
	return &Hub{Send: send, listeners: map[string]map[chan string]struct{}{}}
}

// Notify sends a signal.
func (h *Hub) Notify(ctx context.Context, topic, payload string) error {
	if h.Send != nil {
		return wrap("signal", h.Send(ctx, topic, payload))
	}
	h.Deliver(topic, payload)
	return nil
}

// Deliver hands a signal to this process's listeners of topic; a listener
// whose buffer is full misses it.
func (h *Hub) Deliver(topic, payload string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.listeners[topic] {
		select {
		case ch <- payload:
		default:
		}
	}
}

// Listen hears topic until stop is called.
func (h *Hub) Listen(topic string) (<-chan string, func()) {
	ch := make(chan string, 64)
	h.mu.Lock()
	if h.listeners[topic] == nil {
		h.listeners[topic] = map[chan string]struct{}{}
	}
	h.listeners[topic][ch] = struct{}{}
	h.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			h.mu.Lock()
			delete(h.listeners[topic], ch)
			if len(h.listeners[topic]) == 0 {
				delete(h.listeners, topic)
			}
			h.mu.Unlock()
		})
	}
}
