package admission

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestFIFOHandOver(t *testing.T) { synctest.Test(t, testFIFOHandOver) }

func testFIFOHandOver(t *testing.T) {
	l := New(1, time.Minute)
	release, err := l.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	order := make(chan int, 3)
	for i := range 3 {
		go func() {
			r, err := l.Acquire(context.Background())
			if err != nil {
				t.Error(err)
				return
			}
			order <- i
			r()
		}()
		synctest.Wait() // queued in a known order
		if _, waiting, _ := l.Stats(); waiting != i+1 {
			t.Fatalf("%d waiting, want %d", waiting, i+1)
		}
	}
	release()
	for want := range 3 {
		if got := <-order; got != want {
			t.Fatalf("served %d, want %d", got, want)
		}
	}
	synctest.Wait() // the last one releases after it says it was served
	if used, waiting, _ := l.Stats(); used != 0 || waiting != 0 {
		t.Fatalf("after all released: used %d waiting %d", used, waiting)
	}
}

func TestWaiterLeavesOnCancel(t *testing.T) { synctest.Test(t, testWaiterLeavesOnCancel) }

func testWaiterLeavesOnCancel(t *testing.T) {
	l := New(1, time.Minute)
	release, _ := l.Acquire(context.Background())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := l.Acquire(ctx)
		done <- err
	}()
	synctest.Wait()
	if _, waiting, _ := l.Stats(); waiting != 1 {
		t.Fatalf("%d waiting, want 1", waiting)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if _, waiting, _ := l.Stats(); waiting != 0 {
		t.Fatalf("cancelled waiter still queued")
	}
	release()
	if used, _, _ := l.Stats(); used != 0 {
		t.Fatalf("slot leaked: used %d", used)
	}
}

func TestWaitIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(1, 30*time.Millisecond)
		release, _ := l.Acquire(context.Background())
		defer release()
		start := time.Now()
		if _, err := l.Acquire(context.Background()); !errors.Is(err, ErrTimeout) {
			t.Fatalf("err = %v, want ErrTimeout", err)
		}
		if waited := time.Since(start); waited != 30*time.Millisecond {
			t.Fatalf("gave up after %v, want the bound of 30ms", waited)
		}
	})
}

// A slot granted just as its waiter gives up must not be lost. Real time
// on purpose: the race is the scheduler's to provoke.
func TestRaceBetweenGrantAndTimeout(t *testing.T) {
	for range 200 {
		l := New(1, time.Millisecond)
		release, _ := l.Acquire(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			if r, err := l.Acquire(context.Background()); err == nil {
				r()
			}
		}()
		time.Sleep(time.Millisecond)
		release()
		<-done
		if used, waiting, _ := l.Stats(); used != 0 || waiting != 0 {
			t.Fatalf("used %d waiting %d after everyone left", used, waiting)
		}
	}
}

func TestReleaseIsIdempotent(t *testing.T) {
	l := New(2, time.Minute)
	r, _ := l.Acquire(context.Background())
	r()
	r()
	if used, _, _ := l.Stats(); used != 0 {
		t.Fatalf("used = %d", used)
	}
}
