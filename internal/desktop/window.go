package desktop

import (
	"context"
	"log/slog"
	"sync"
)

// windows is the panel window under way: one at a time, each joined.
type windows struct {
	mu     sync.Mutex
	shown  bool
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// open starts the panel unless it is open already.
func (w *windows) open(ctx context.Context, panel func(context.Context, string, string) error, origin, cookie string, log *slog.Logger) error {
	if panel == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.shown {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	w.shown, w.cancel = true, cancel
	w.wg.Go(func() {
		if err := panel(ctx, origin, cookie); err != nil && ctx.Err() == nil {
			log.Warn("the panel window ended with an error", "err", err)
		}
		cancel()
		w.mu.Lock()
		w.shown = false
		w.mu.Unlock()
	})
	return nil
}

// close closes the panel and waits for it.
func (w *windows) close() {
	w.mu.Lock()
	cancel := w.cancel
	w.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	w.wg.Wait()
}
