package gateway

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/meridian-gw/meridian/internal/pool"
)

// freezable is an idle session that can be frozen.
type freezable struct {
	idleSession
	frozen atomic.Bool
}

func (f *freezable) Freeze() error { f.frozen.Store(true); return nil }
func (f *freezable) Thaw() error   { f.frozen.Store(false); return nil }

// While turns hold a slot on every core, an idle process is frozen at
// once (its own post-turn work waits); when one of them ends it wakes.
func TestIdleProcessesYieldWhileEveryCoreHasATurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cores := runtime.NumCPU()
		g := New(Config{Backend: &spareBackend{}, MaxLive: 4, MaxConcurrent: cores + 1, FreezeIdle: true})
		defer g.Close()
		if err := g.pool.Reserve(context.Background()); err != nil {
			t.Fatal(err)
		}
		s := &freezable{idleSession: idleSession{id: "idle"}}
		l := &pool.Live{Key: "idle", Session: s}
		g.pool.Track(l)
		g.pool.Put(l) // just used: awake for its own work
		var releases []func()
		for i := range cores {
			if s.frozen.Load() {
				t.Fatalf("frozen with %d of %d cores running turns", i, cores)
			}
			r, err := g.admit(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			releases = append(releases, r)
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
