package pool

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/meridian-gw/meridian/internal/backend"
)

// calmWait is spareplan's wait after a busy moment, seen from here.
const calmWait = time.Second

// freezable is an idle session that can be frozen.
type freezable struct {
	idleSession
	frozen atomic.Bool
}

func (f *freezable) Freeze() error         { f.frozen.Store(true); return nil }
func (f *freezable) Thaw() error           { f.frozen.Store(false); return nil }
func (f *freezable) Settle() time.Duration { return 0 }

// While turns hold a slot on every core, an idle process is frozen at
// once (its own post-turn work waits); when one of them ends it wakes.
func TestIdleProcessesYieldWhileEveryCoreHasATurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cores := runtime.NumCPU()
		g := newRig(&spareBackend{}, rigConfig{maxLive: 4, concurrent: cores + 1})
		g.cfg.FreezeAfter = DefaultFreezeAfter
		defer g.Close()
		if err := g.Reserve(context.Background()); err != nil {
			t.Fatal(err)
		}
		s := &freezable{idleSession: idleSession{id: "idle"}}
		l := &Live{Key: "idle", Session: s}
		g.Track(l)
		g.Put(l) // just used: awake for its own work
		var releases []func()
		for i := range cores {
			if s.frozen.Load() {
				t.Fatalf("frozen with %d of %d cores running turns", i, cores)
			}
			releases = append(releases, g.admit(t))
		}
		if !s.frozen.Load() {
			t.Fatal("awake while every core runs a turn")
		}
		releases[0]()
		if s.frozen.Load() {
			t.Fatal("still frozen once a core was free")
		}
		for _, r := range releases[1:] {
			r()
		}
	})
}

// A spare waits a moment after turns ran on every core: the work that
// follows a burst comes at once, and a spare's start would slow it.
func TestASpareWaitsForCalmAfterABusyMoment(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cores := runtime.NumCPU()
		b := &spareBackend{}
		g := newRig(b, rigConfig{min: 1, max: 4, maxLive: 32, concurrent: cores})
		defer g.Close()
		var releases []func()
		for range cores {
			releases = append(releases, g.admit(t))
		}
		g.refill(backend.StartOptions{Model: "m"})
		time.Sleep(5 * time.Second)
		for _, r := range releases {
			r()
		}
		time.Sleep(calmWait - 100*time.Millisecond)
		synctest.Wait()
		if n := b.started.Load(); n != 0 {
			t.Fatalf("%d spares started right after every core had a turn", n)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if n := spareCount(g); n != 1 {
			t.Fatalf("%d spares once calm, want 1", n)
		}
	})
}
