package pool

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/meridian-gw/meridian/internal/backend"
)

// slowExit is a session whose process takes until exit is closed to go.
type slowExit struct {
	fakeSession
	exit chan struct{}
}

func (s *slowExit) Close() error {
	<-s.exit
	return s.fakeSession.Close()
}

// A conversation whose idle process was reclaimed to make room, or closed
// past its idle time, gets its next process only once that one is gone:
// two CLIs never hold one session at once. Another conversation's start
// does not wait for it, and a caller that gives up while waiting leaves
// no place taken.
func TestAConversationsNextProcessWaitsForItsLast(t *testing.T) {
	for _, how := range []string{"reclaimed", "expired"} {
		t.Run(how, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := New(Config{Max: 2, IdleTTL: time.Minute})
				defer p.Close()
				x := &slowExit{fakeSession: fakeSession{id: "x"}, exit: make(chan struct{})}
				_ = p.Reserve(context.Background())
				p.Put(&Live{Key: "x", Session: x})
				var started atomic.Int32
				want := func(key string) Want {
					return Want{Key: key, Start: func(context.Context) (backend.Session, backend.StartOptions, error) {
						started.Add(1)
						return &fakeSession{id: key}, backend.StartOptions{}, nil
					}}
				}
				switch how {
				case "reclaimed":
					// y fills the second place; z's start reclaims x.
					y, _, err := p.Obtain(context.Background(), want("y"))
					if err != nil {
						t.Fatal(err)
					}
					p.Put(y)
					time.Sleep(time.Second)
					p.Put(p.take("y")) // y used after x: x is the least recently used
					z, _, err := p.Obtain(context.Background(), want("z"))
					if err != nil || started.Load() != 2 {
						t.Fatalf("z waited on x's exit: %v, %d started", err, started.Load())
					}
					p.Discard(z)
				case "expired":
					time.Sleep(time.Minute + 20*time.Second) // the reaper takes x
					synctest.Wait()
				}
				if x.closed.Load() {
					t.Fatal("x's process is gone already; the test shows nothing")
				}
				before := started.Load()
				// One caller gives up while it waits: nothing is left taken.
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				if _, _, err := p.Obtain(ctx, want("x")); !errors.Is(err, context.DeadlineExceeded) || started.Load() != before {
					t.Fatalf("a caller out of patience: %v, %d started", err, started.Load()-before)
				}
				cancel()
				got := make(chan error, 1)
				go func() {
					l, _, err := p.Obtain(context.Background(), want("x"))
					if err == nil {
						p.Discard(l)
					}
					got <- err
				}()
				synctest.Wait()
				if started.Load() != before {
					t.Fatal("x's next process started while its last was still exiting")
				}
				close(x.exit)
				if err := <-got; err != nil || started.Load() != before+1 {
					t.Fatalf("x's next process once its last was gone: %v, %d started", err, started.Load()-before)
				}
			})
		})
	}
}
