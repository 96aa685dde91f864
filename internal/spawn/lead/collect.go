package lead

import (
	"context"
	"os"
	"slices"
	"time"

	"github.com/meridian-gw/meridian/internal/spawn"
)

// Delivery is what collect prints: the children that finished, header
// only, or nothing.
type Delivery struct {
	Kind string   `json:"kind"` // "delivery" or "empty"
	IDs  []string `json:"ids"`
	Text string   `json:"text"`
}

// Empty is the delivery of nothing.
func Empty() Delivery { return Delivery{Kind: "empty", IDs: []string{}, Text: ""} }

// Collect timings. A finalize is seen within Poll; siblings finishing
// within Batch of each other go out together; Recheck bounds how stale a
// decision that depends on time rather than on a commit (a wait's lease
// lapsing, the reaper's window passing) may get.
const (
	CollectPoll    = 50 * time.Millisecond
	CollectBatch   = 300 * time.Millisecond
	CollectRecheck = 2 * time.Second
)

// Collect waits for the caller's children to finish and returns one
// delivery of everything owed, or Empty when nothing is owed and nothing
// runs. It blocks while children run, and gives up with Empty when ctx
// ends or its parent process changes (the lead died): it consumes
// nothing, ack does. It never reads a report.
func (l *Lead) Collect(ctx context.Context, exclude []string) (Delivery, error) {
	parent := os.Getppid()
	watch, err := l.Registry.Watch(ctx)
	if err != nil {
		return Delivery{}, err
	}
	defer watch.Close()
	var reconciled time.Time
	for {
		// The reaper's verdicts change with time, not with commits, so
		// it runs at the recheck pace rather than on every wake.
		if time.Since(reconciled) >= CollectRecheck {
			l.Reconcile(ctx)
			reconciled = time.Now()
		}
		owed, active, err := l.owedExcept(ctx, exclude)
		if err != nil {
			return Delivery{}, err
		}
		if len(owed) > 0 {
			l.log().Debug("collect: children finished; batching", "owed", len(owed))
			// Let siblings finishing together arrive in the same delivery.
			if !sleep(ctx, CollectBatch) {
				return Empty(), nil
			}
			if owed, _, err = l.owedExcept(ctx, exclude); err != nil {
				return Delivery{}, err
			}
			return l.deliver(owed), nil
		}
		if len(active) == 0 {
			return Empty(), nil
		}
		// Block until something commits (a child finalizing, most likely)
		// or the recheck is due.
		l.log().Debug("collect: waiting for children", "active", len(active))
		if _, err := watch.Wait(ctx, CollectPoll, CollectRecheck, func() bool { return os.Getppid() != parent }); err != nil {
			return Delivery{}, err
		}
		if ctx.Err() != nil || os.Getppid() != parent {
			return Empty(), nil
		}
	}
}

func (l *Lead) owedExcept(ctx context.Context, exclude []string) (owed, active []spawn.Spawn, err error) {
	owed, active, _, err = l.owed(ctx)
	owed = slices.DeleteFunc(owed, func(s spawn.Spawn) bool { return slices.Contains(exclude, s.ID) })
	return owed, active, err
}

func (l *Lead) deliver(owed []spawn.Spawn) Delivery {
	if len(owed) == 0 {
		return Empty()
	}
	d := Delivery{Kind: "delivery", Text: spawn.DeliveryText(owed, l.Cwd)}
	for _, s := range owed {
		d.IDs = append(d.IDs, s.ID)
	}
	return d
}

// sleep waits d, or reports false if ctx ends first.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
