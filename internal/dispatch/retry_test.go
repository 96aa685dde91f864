package dispatch

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/meridian-gw/meridian/internal/answers"
	"github.com/meridian-gw/meridian/internal/gateway"
	"github.com/meridian-gw/meridian/internal/journal"
	"github.com/meridian-gw/meridian/internal/store"
	"github.com/meridian-gw/meridian/internal/store/sqlite/sqlitetest"
)

// hostOwners is one host of two: a is alive until aDied.
type hostOwners struct {
	self  store.Owner
	aDied *atomic.Bool
}

func (o hostOwners) Self() store.Owner { return o.self }

func (o hostOwners) Alive(_ context.Context, x store.Owner) (bool, error) {
	return x.Host != "a" || !o.aDied.Load(), nil
}

// twoHosts are the retry halves of two hosts' dispatchers on one store.
func twoHosts(t *testing.T, aDied *atomic.Bool) (a, b *Dispatcher) {
	t.Helper()
	st := sqlitetest.Open(t)
	host := func(name string) *Dispatcher {
		owners := hostOwners{self: store.Owner{Host: name, Incarnation: "1"}, aDied: aDied}
		return New(Config{Answers: answers.New(st.Answers, answers.DefaultLimits(), nil),
			Journal: journal.New(st.Journal, owners, 0, 0, nil).Notifying(st.Signals)})
	}
	return host("a"), host("b")
}

// A named request whose twin runs on another host waits for it and gets
// the answer it saved; one whose twin ends without an answer runs; one
// whose twin's host dies meanwhile has an unknown outcome.
func TestOnceWaitsForATwinOnAnotherHost(t *testing.T) {
	ctx := context.Background()
	r := Retry{Scope: "s", Key: "k", Named: true}

	t.Run("saved", func(t *testing.T) {
		// In a bubble, so that the twin's hearing the end, not its
		// recheck a second later, is what the clock tells.
		synctest.Test(t, func(t *testing.T) {
			a, b := twoHosts(t, new(atomic.Bool))
			_, run, err := a.Once(ctx, r)
			if err != nil || run == nil {
				t.Fatalf("the first: %v", err)
			}
			got := make(chan *answers.Answer, 1)
			go func() {
				saved, _, err := b.Once(ctx, r)
				if err != nil {
					t.Error(err)
				}
				got <- saved
			}()
			time.Sleep(100 * time.Millisecond)
			synctest.Wait() // b is waiting
			run.Save(answers.Answer{Status: http.StatusOK, Body: []byte("the answer")})
			run.Done()
			ended := time.Now()
			saved := <-got
			if saved == nil || string(saved.Body) != "the answer" {
				t.Fatalf("the twin on b got %+v", saved)
			}
			if waited := time.Since(ended); waited >= elsewhereRecheck/2 {
				t.Fatalf("b answered %v after the first ended: it did not hear the end", waited)
			}
		})
	})

	t.Run("unsaved", func(t *testing.T) {
		a, b := twoHosts(t, new(atomic.Bool))
		_, run, _ := a.Once(ctx, r)
		go func() { time.Sleep(50 * time.Millisecond); run.Done() }()
		saved, own, err := b.Once(ctx, r)
		if err != nil || saved != nil || own == nil {
			t.Fatalf("after a twin that saved nothing: %v %v %v", saved, own, err)
		}
		own.Done()
	})

	t.Run("its host died", func(t *testing.T) {
		died := new(atomic.Bool)
		a, b := twoHosts(t, died)
		if _, _, err := a.Once(ctx, r); err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		done := make(chan error, 1)
		go func() { _, _, err := b.Once(wctx, r); done <- err }()
		time.Sleep(50 * time.Millisecond)
		died.Store(true) // read by the recheck, after its first second
		var ge *gateway.Error
		if err := <-done; !errors.As(err, &ge) || ge.Status != http.StatusConflict || ge.RetryAfter != 0 {
			t.Fatalf("once the twin's host died: %v", err)
		}
	})
}
