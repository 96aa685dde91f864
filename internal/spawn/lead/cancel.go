package lead

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/meridian-gw/meridian/internal/procgroup"

	"github.com/meridian-gw/meridian/internal/procident"
	"github.com/meridian-gw/meridian/internal/spawn"
	"github.com/meridian-gw/meridian/internal/spawn/registry"
)

// DefaultCancelWait is how long cancel waits for a worker to finalize its
// own cancellation before reporting the spawn as still finalizing.
const DefaultCancelWait = 10 * time.Second

// CancelOutcome is a spawn as it stands after a cancel.
type CancelOutcome struct {
	Row registry.Row
	// Ended: the spawn had already ended before the cancel.
	Ended bool
}

// Cancel stops active spawns: a live worker is asked to stop (SIGTERM)
// and finalizes the spawn itself; a spawn whose worker is gone is
// finalized cancelled here. Those it reports cancelled are consumed (the
// caller was told); one still finalizing is delivered later.
func (l *Lead) Cancel(ctx context.Context, ids []string, observe bool) ([]CancelOutcome, error) {
	if len(ids) == 0 {
		return nil, errors.New("cancel needs at least one spawn id")
	}
	// Check every id before touching any, so a typo cancels nothing.
	rows, err := l.getAll(ctx, ids)
	if err != nil {
		return nil, err
	}
	for _, row := range rows {
		if row.Kind == registry.KindPrimary {
			return nil, fmt.Errorf("%s is a lead's own claude session (meridian claude), not a background spawn: end it where it runs", row.ID)
		}
	}
	ended := make([]bool, len(rows))
	for i, row := range rows {
		ended[i] = row.Status.Terminal()
	}
	for _, row := range rows {
		if !row.Status.Active() {
			continue
		}
		if procident.Alive(row.RunnerPID, row.RunnerStart) {
			if err := procgroup.Signal(row.RunnerPID, syscall.SIGTERM); err != nil {
				return nil, fmt.Errorf("signal %s's worker: %w", row.ID, err)
			}
		}
	}
	wait := l.CancelWait
	if wait <= 0 {
		wait = DefaultCancelWait
	}
	deadline := time.Now().Add(wait)
	for i, row := range rows {
		if !row.Status.Active() {
			continue
		}
		var err error
		if rows[i], err = l.awaitCancel(ctx, row, deadline); err != nil {
			return nil, err
		}
	}
	out := make([]CancelOutcome, len(rows))
	var cancelled []registry.Row
	for i, r := range rows {
		out[i] = CancelOutcome{Row: r, Ended: ended[i]}
		if r.Status == spawn.Cancelled {
			cancelled = append(cancelled, r)
		}
	}
	return out, l.consume(context.WithoutCancel(ctx), "cancel", observe, cancelled...)
}

// awaitCancel waits for a signalled worker to finalize; once the worker is
// gone (or never was), the cancel is written here.
func (l *Lead) awaitCancel(ctx context.Context, row registry.Row, deadline time.Time) (registry.Row, error) {
	for {
		cur, err := l.Registry.Get(ctx, l.Project, row.ID)
		if err != nil {
			return row, err
		}
		if cur.Status.Terminal() {
			return cur, nil
		}
		if !procident.Alive(cur.RunnerPID, cur.RunnerStart) {
			// Queued with no worker yet, or a worker that died: nobody else
			// will write the outcome. A worker still starting finds the
			// spawn cancelled and does not run it.
			if _, err := l.Registry.Finalize(ctx, l.Project, cur.ID, registry.Final{Status: spawn.Cancelled,
				Origin: spawn.Cancel, ExitCode: 130}); err != nil {
				return cur, err
			}
			return l.Registry.Get(ctx, l.Project, cur.ID)
		}
		if time.Now().After(deadline) {
			return cur, nil
		}
		if !sleep(ctx, CollectPoll) {
			return cur, ctx.Err()
		}
	}
}
