package gateway

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/meridian-gw/meridian/internal/backend"
)

// planInspector reads plan limits after a second, failing when told.
type planInspector struct {
	slowInspector
	reads atomic.Int32
	fail  atomic.Bool
}

func (p *planInspector) PlanUsage(ctx context.Context) (backend.PlanUsage, error) {
	n := p.reads.Add(1)
	time.Sleep(time.Second)
	if p.fail.Load() {
		return backend.PlanUsage{}, errors.New("usage endpoint at /home/u/x refused")
	}
	used := float64(n * 10)
	return backend.PlanUsage{Subscription: "max", Available: true, Windows: []backend.PlanWindow{{Name: "five_hour", Utilization: &used}}}, nil
}

// Concurrent callers share one probe; its reading is trusted for a
// minute; when the next probe fails, the last good reading is served,
// marked stale, without the probe's local details.
func TestPlanReadingIsSingleFlightAndGoesStale(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		in := &planInspector{}
		g := New(Config{Inspector: in})
		defer g.Close()
		var wg sync.WaitGroup
		readings := make([]*PlanReading, 8)
		for i := range readings {
			wg.Go(func() { readings[i] = g.Plan(context.Background()) })
		}
		wg.Wait()
		for _, r := range readings {
			if r.Stale || len(r.Windows) != 1 || *r.Windows[0].Utilization != 10 {
				t.Fatalf("reading %+v", r)
			}
		}
		if n := in.reads.Load(); n != 1 {
			t.Fatalf("%d probes for 8 concurrent callers", n)
		}
		observed := readings[0].ObservedAt

		in.fail.Store(true)
		time.Sleep(planTTL)
		r := g.Plan(context.Background())
		if !r.Stale || r.Error == "" || !r.ObservedAt.Equal(observed) || *r.Windows[0].Utilization != 10 {
			t.Fatalf("after a failed probe: %+v", r)
		}
		if n := in.reads.Load(); n != 2 {
			t.Fatalf("%d probes", n)
		}
		if want := "the latest reading failed: usage endpoint at …/x refused"; r.Error != want {
			t.Fatalf("error %q, want %q", r.Error, want)
		}
		// A failure is not asked again at once.
		if r := g.Plan(context.Background()); !r.Stale || in.reads.Load() != 2 {
			t.Fatalf("%+v after %d probes", r, in.reads.Load())
		}
		in.fail.Store(false)
		time.Sleep(planFailTTL)
		if r := g.Plan(context.Background()); r.Stale || *r.Windows[0].Utilization != 30 {
			t.Fatalf("recovered: %+v", r)
		}
	})
}

// A caller does not wait longer than its patience for a slow probe.
func TestPlanCallerPatience(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := New(Config{Inspector: &slowPlan{}})
		defer g.Close()
		start := time.Now()
		r := g.Plan(context.Background())
		if time.Since(start) != planPatience || !r.Stale || r.Available {
			t.Fatalf("after %v: %+v", time.Since(start), r)
		}
	})
}

type slowPlan struct{ slowInspector }

func (s *slowPlan) PlanUsage(ctx context.Context) (backend.PlanUsage, error) {
	<-ctx.Done()
	return backend.PlanUsage{}, ctx.Err()
}
