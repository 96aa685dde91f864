package lead

import (
	"context"
	"fmt"
	"time"

	"github.com/meridian-gw/meridian/internal/procident"
	"github.com/meridian-gw/meridian/internal/spawn"
	"github.com/meridian-gw/meridian/internal/spawn/registry"
	"github.com/meridian-gw/meridian/internal/spawn/runner"
)

// MaxOwedShown bounds how many already-finished children a wait without
// ids returns; the rest stay owed for collect or a later wait.
const MaxOwedShown = 32

// Lease timing: a wait's lease lapses this long after its last renewal, so
// a wait killed outright stops hiding children from collect soon after.
const (
	leaseTTL   = 60 * time.Second
	leaseRenew = 20 * time.Second
)

// WaitOptions shape a wait.
type WaitOptions struct {
	// IDs to wait for; none means the caller's direct children that are
	// running or owed.
	IDs      []string
	Timeout  time.Duration // 0 waits as long as it takes
	Observe  bool          // false: no lease, nothing consumed
	FailFast bool          // return as soon as a waited run fails
	// Began, if set, hears of the already-finished children the wait
	// returns, before it starts waiting.
	Began func(owed []registry.Row)
	// Finished, if set, hears of each waited run as it ends, so text
	// output can follow the runs.
	Finished func(Finished)
	// Running, if set, hears about once a second of the waited runs still
	// active, for live status lines.
	Running func([]registry.Row)
}

// Finished is a waited run that ended, with its report.
type Finished struct {
	Row    registry.Row
	Report string
}

// WaitResult is what a wait returns.
type WaitResult struct {
	Runs    []Finished     // waited runs that ended, in the order they did
	Pending []registry.Row // waited runs still active on return
	// Owed are already-finished children returned header-only (no ids
	// given), oldest first, at most MaxOwedShown.
	Owed     []registry.Row
	TimedOut bool
}

// ExitCode is 124 on timeout, 1 if any waited run did not succeed (or is
// still running), else 0. Owed children never change it.
func (w WaitResult) ExitCode() int {
	if w.TimedOut {
		return 124
	}
	if len(w.Pending) > 0 {
		return 1
	}
	for _, r := range w.Runs {
		if r.Row.Status != spawn.Succeeded {
			return 1
		}
	}
	return 0
}

// Wait blocks until the targeted runs end. While it runs it leases its
// targets so collect does not deliver them too; on return it consumes
// what it returned.
func (l *Lead) Wait(ctx context.Context, o WaitOptions) (WaitResult, error) {
	var res WaitResult
	pending := map[string]bool{}
	var order []string // pending ids, in creation order
	if len(o.IDs) > 0 {
		rows, err := l.getAll(ctx, o.IDs)
		if err != nil {
			return res, err
		}
		for _, row := range rows {
			if !pending[row.ID] {
				pending[row.ID] = true
				order = append(order, row.ID)
			}
		}
	} else {
		l.Reconcile(ctx)
		owed, active, rows, err := l.owed(ctx)
		if err != nil {
			return res, err
		}
		for i, s := range owed {
			if i == MaxOwedShown {
				break
			}
			res.Owed = append(res.Owed, rows[s.ID])
		}
		for _, s := range active {
			pending[s.ID] = true
			order = append(order, s.ID)
		}
	}

	leasing := o.Observe && !l.ReadOnly
	pid, start := procident.Self()
	lease := func() error {
		ids := append([]string(nil), order...)
		for _, r := range res.Owed {
			ids = append(ids, r.ID)
		}
		return l.Registry.Lease(ctx, l.Project, l.ID, pid, start, l.now().Add(leaseTTL), ids...)
	}
	if leasing {
		if err := lease(); err != nil {
			return res, err
		}
		// The lease goes whatever happens next; a cancelled ctx must not
		// stop it.
		defer func() { _ = l.Registry.Unlease(context.WithoutCancel(ctx), l.Project, pid) }()
	}

	if o.Began != nil {
		o.Began(res.Owed)
	}
	err := l.waitRuns(ctx, o, pending, order, &res, leasing, lease)
	for _, id := range order {
		if pending[id] {
			row, gerr := l.Registry.Get(context.WithoutCancel(ctx), l.Project, id)
			if gerr == nil {
				res.Pending = append(res.Pending, row)
			}
		}
	}
	if err != nil {
		return res, err
	}
	shown := append([]registry.Row(nil), res.Owed...)
	for _, r := range res.Runs {
		shown = append(shown, r.Row)
	}
	return res, l.consume(context.WithoutCancel(ctx), "wait", o.Observe, shown...)
}

// waitRuns follows the pending runs until all end, the timeout passes,
// ctx ends, or (fail-fast) one fails.
func (l *Lead) waitRuns(ctx context.Context, o WaitOptions, pending map[string]bool, order []string, res *WaitResult, leasing bool, lease func() error) error {
	if len(order) == 0 {
		return nil
	}
	watch, err := l.Registry.Watch(ctx)
	if err != nil {
		return err
	}
	defer watch.Close()
	// until ends with the timeout; ctx ending means the wait was stopped.
	until := ctx
	if o.Timeout > 0 {
		var cancel context.CancelFunc
		until, cancel = context.WithTimeout(ctx, o.Timeout)
		defer cancel()
	}
	renewed, reconciled := time.Now(), time.Now()
	wake := CollectRecheck
	if o.Running != nil {
		wake = time.Second
	}
	for left := len(order); ; {
		var running []registry.Row
		for _, id := range order {
			if !pending[id] {
				continue
			}
			row, err := l.Registry.Get(ctx, l.Project, id)
			if err != nil {
				return err
			}
			if !row.Status.Terminal() {
				running = append(running, row)
				continue
			}
			pending[id] = false
			left--
			f := Finished{Row: row, Report: runner.Artifacts(row.Dir).ReadReport()}
			res.Runs = append(res.Runs, f)
			if o.Finished != nil {
				o.Finished(f)
			}
			if o.FailFast && row.Status != spawn.Succeeded {
				return nil
			}
		}
		if left == 0 {
			return nil
		}
		if o.Running != nil {
			o.Running(running)
		}
		if ctx.Err() != nil {
			return fmt.Errorf("wait interrupted: %w", ctx.Err())
		}
		if until.Err() != nil {
			res.TimedOut = true
			return nil
		}
		if leasing && time.Since(renewed) >= leaseRenew {
			if err := lease(); err != nil {
				return err
			}
			renewed = time.Now()
		}
		if time.Since(reconciled) >= CollectRecheck {
			l.Reconcile(ctx)
			reconciled = time.Now()
		}
		if _, err := watch.Wait(until, CollectPoll, wake, nil); err != nil {
			return err
		}
	}
}
