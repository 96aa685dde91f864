package dispatch

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/meridian-gw/meridian/internal/gateway"
	"github.com/meridian-gw/meridian/internal/headroom"
	"github.com/meridian-gw/meridian/internal/store"
)

// sharedTTL bounds how old the benches and figures other hosts recorded
// may be when a request is placed: a profile benched (or unbenched) on
// one host is seen on every other within it.
const sharedTTL = time.Second

// refigure is how long figures that did not change stay unpublished: a
// host that keeps seeing the same figures still says it saw them.
const refigure = time.Minute

// shared is this host's copy of what every host recorded of the profiles.
type shared struct {
	reading sync.Mutex // one read of the store at a time
	view    atomic.Pointer[sharedView]

	mu        sync.Mutex
	published map[string]store.PlanFigures // the last figures this host kept, by profile
}

// sharedView is the store's profiles as read at one time.
type sharedView struct {
	at      time.Time
	figures map[string]store.PlanFigures
}

// shared brings this host's copy of the benches and figures every host
// recorded up to date when it is older than sharedTTL. One request reads
// the store; the others go on with the copy they have.
func (d *Dispatcher) shared(ctx context.Context) *sharedView {
	now := d.cfg.Now()
	v := d.others.view.Load()
	if d.cfg.Bench == nil || (v != nil && now.Sub(v.at) < sharedTTL) {
		return v
	}
	if !d.others.reading.TryLock() {
		return v
	}
	defer d.others.reading.Unlock()
	benched, err := d.cfg.Bench.Benched(ctx, now)
	if err != nil {
		d.log.Warn("store: could not read the profiles other hosts benched; this host's own benches stand", "err", err)
		return v
	}
	next := &sharedView{at: now}
	if d.cfg.Figures != nil {
		if next.figures, err = d.cfg.Figures.All(ctx); err != nil {
			d.log.Warn("store: could not read the profiles' plan figures; this host's own stand", "err", err)
			if v != nil {
				next.figures = v.figures
			}
		}
	}
	// The store holds every bench, this host's own included: an
	// operator's unbench ends one here too.
	for name, until := range d.bench.Replace(benched) {
		if d.cfg.Watch != nil {
			d.cfg.Watch.Reopened(name, until)
		}
	}
	d.others.view.Store(next)
	return next
}

// benchProfile benches a profile here and for every host.
func (d *Dispatcher) benchProfile(ctx context.Context, name string, wait time.Duration) time.Time {
	now := d.cfg.Now()
	until := d.bench.Put(name, now, wait)
	if d.cfg.Watch != nil {
		d.cfg.Watch.Bench(name, until)
	}
	if d.cfg.Bench != nil {
		if _, err := d.cfg.Bench.Put(context.WithoutCancel(ctx), name, until); err != nil {
			d.log.Warn("store: could not share a profile's bench with the other hosts", "profile", name, "err", err)
		}
	}
	return until
}

// heard tells the watcher what a profile's answer says of its login.
func (d *Dispatcher) heard(name string, err error) {
	var ge *gateway.Error
	if d.cfg.Watch != nil && errors.As(err, &ge) && ge.Status == http.StatusUnauthorized {
		d.cfg.Watch.LoggedOut(name)
	}
}

// figures are a profile's plan windows: what its gateway here last saw,
// or what any host kept in the store when that is newer.
func (d *Dispatcher) figures(v *sharedView, name string, a Answerer) []headroom.Window {
	return windows(newestFigures(v, name, a))
}

// newestFigures are a profile's figures as figures chooses them.
func newestFigures(v *sharedView, name string, a Answerer) store.PlanFigures {
	local := Figures(a.RateWindows())
	if v == nil {
		return local
	}
	if kept, ok := v.figures[name]; ok && kept.ObservedAt.After(local.ObservedAt) {
		return kept
	}
	return local
}

// publish keeps a profile's figures for every host after its turn, when
// they changed since this host last kept them (or that was long ago).
func (d *Dispatcher) publish(ctx context.Context, name string, a Answerer) {
	if d.cfg.Figures == nil && d.cfg.Watch == nil {
		return
	}
	f := Figures(a.RateWindows())
	if f.ObservedAt.IsZero() {
		return
	}
	if d.cfg.Watch != nil {
		d.cfg.Watch.Figures(name, f)
	}
	d.others.mu.Lock()
	last, ok := d.others.published[name]
	if ok && (!f.ObservedAt.After(last.ObservedAt) || (sameFigures(f, last) && f.ObservedAt.Sub(last.ObservedAt) < refigure)) {
		d.others.mu.Unlock()
		return
	}
	if d.others.published == nil {
		d.others.published = map[string]store.PlanFigures{}
	}
	d.others.published[name] = f
	d.others.mu.Unlock()
	if d.cfg.Figures == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), publishTimeout)
	defer cancel()
	if _, err := d.cfg.Figures.Put(ctx, name, f); err != nil {
		d.log.Warn("store: could not share a profile's plan figures with the other hosts", "profile", name, "err", err)
	}
}

// publishTimeout bounds keeping a profile's figures after its turn.
const publishTimeout = 2 * time.Second

// Figures are a profile's rate-limit windows as the store keeps them,
// observed when the newest of them was.
func Figures(rw []gateway.RateWindow) store.PlanFigures {
	var f store.PlanFigures
	for _, w := range rw {
		if w.Type == "" || w.Type == "default" {
			continue // an event that named no window says nothing of one
		}
		f.Windows = append(f.Windows, store.PlanWindow{Name: w.Type, Used: w.Utilization, ResetsAt: w.ResetsAt, Overage: w.Overage})
		if w.ObservedAt.After(f.ObservedAt) {
			f.ObservedAt = w.ObservedAt
		}
	}
	return f
}

func windows(f store.PlanFigures) []headroom.Window {
	out := make([]headroom.Window, len(f.Windows))
	for i, w := range f.Windows {
		out[i] = headroom.Window{Name: w.Name, Used: w.Used, ResetsAt: w.ResetsAt}
	}
	return out
}

// sameFigures: the same windows, each used to the same whole percent and
// resetting at the same time.
func sameFigures(a, b store.PlanFigures) bool {
	return slices.EqualFunc(a.Windows, b.Windows, func(x, y store.PlanWindow) bool {
		return x.Name == y.Name && int(x.Used*100) == int(y.Used*100) && x.ResetsAt.Equal(y.ResetsAt) && x.Overage == y.Overage
	})
}

// Unbench reopens a profile now, here and (through the store) on every
// host within sharedTTL: the operator says it can answer.
func (d *Dispatcher) Unbench(ctx context.Context, name string) error {
	if until := d.bench.Until(name, d.cfg.Now()); !until.IsZero() && d.cfg.Watch != nil {
		d.cfg.Watch.Reopened(name, until)
	}
	d.bench.Clear(name)
	if err := Reopen(ctx, d.cfg.Bench, d.cfg.Figures, name, d.cfg.Now()); err != nil {
		d.log.Error("store: could not reopen a profile for the other hosts", "profile", name, "err", err)
		return err
	}
	d.others.view.Store(nil) // the next request reads the store again
	return nil
}

// Reopen ends a profile's bench in the store and forgets its figures as
// of now, until its next turn reports them (a plan-only profile's spent
// window no longer keeps it out); either store may be nil.
func Reopen(ctx context.Context, bench store.Bench, figures store.Figures, name string, now time.Time) error {
	if bench != nil {
		if err := bench.Clear(ctx, name); err != nil {
			return err
		}
	}
	if figures != nil {
		if _, err := figures.Put(ctx, name, store.PlanFigures{ObservedAt: now}); err != nil {
			return err
		}
	}
	return nil
}

// Share keeps figures read outside a turn (a probe of the plan, the
// operator's check) for every host, and tells the watcher.
func (d *Dispatcher) Share(ctx context.Context, name string, rw []gateway.RateWindow) error {
	f := Figures(rw)
	if f.ObservedAt.IsZero() {
		return nil
	}
	if d.cfg.Watch != nil {
		d.cfg.Watch.Figures(name, f)
	}
	if d.cfg.Figures == nil {
		return nil
	}
	if _, err := d.cfg.Figures.Put(ctx, name, f); err != nil {
		return err
	}
	d.others.view.Store(nil) // the next request reads the store again
	return nil
}
