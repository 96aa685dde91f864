package responses

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
)

func frame(i int) []byte { return []byte(fmt.Sprintf("data: %d\n\n", i)) }

func collect(t *testing.T, l *EventLog, after int) (string, error) {
	t.Helper()
	var got []string
	err := l.Follow(context.Background(), after, func(frames [][]byte) error {
		for _, f := range frames {
			got = append(got, strings.TrimSpace(strings.TrimPrefix(string(f), "data: ")))
		}
		return nil
	})
	return strings.Join(got, " "), err
}

// A follower replays from any kept point, then follows live to the end.
func TestEventLogReplaysAndFollows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := NewEventLog(0)
		l.Append(frame(0), frame(1), frame(2))
		var got string
		var wg sync.WaitGroup
		wg.Go(func() {
			var err error
			if got, err = collect(t, l, 0); err != nil {
				t.Error(err)
			}
		})
		synctest.Wait() // the follower has read 1 and 2 and waits
		l.Append(frame(3))
		synctest.Wait()
		l.Append(frame(4))
		l.End()
		wg.Wait()
		if got != "1 2 3 4" {
			t.Fatalf("followed %q", got)
		}
		if all, _ := collect(t, l, -1); all != "0 1 2 3 4" {
			t.Fatalf("replayed %q", all)
		}
	})
}

// The log keeps at most its bytes: the oldest events go, and a replay
// from before what is kept is refused rather than silently short.
func TestEventLogIsBounded(t *testing.T) {
	l := NewEventLog(3 * len(frame(0)))
	for i := range 10 {
		l.Append(frame(i))
	}
	l.End()
	if got, err := collect(t, l, 6); err != nil || got != "7 8 9" {
		t.Fatalf("kept %q, %v", got, err)
	}
	if l.Keeps(5) || !l.Keeps(6) {
		t.Fatal("Keeps disagrees with what is kept")
	}
	if _, err := collect(t, l, 2); !errors.Is(err, ErrTrimmed) {
		t.Fatalf("replay from a dropped event: %v", err)
	}
}

// A follower leaves when its client does.
func TestEventLogFollowerLeaves(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := NewEventLog(0)
		ctx, cancel := context.WithCancel(context.Background())
		var err error
		var wg sync.WaitGroup
		wg.Go(func() { err = l.Follow(ctx, -1, func([][]byte) error { return nil }) })
		synctest.Wait()
		cancel()
		wg.Wait()
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v", err)
		}
	})
}

func current() json.RawMessage { return json.RawMessage(`{}`) }

// Jobs are bounded: beyond the bound new work is refused, never running
// work evicted. Cancel interrupts a job and waits for it; Close stops all.
func TestJobs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j := NewJobs(JobsConfig{Max: 2})
		causes := make(chan error, 3)
		run := func(ctx context.Context, log *EventLog) {
			<-ctx.Done()
			causes <- context.Cause(ctx)
		}
		for _, id := range []string{"a", "b"} {
			if _, err := j.Start(id, current, run); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := j.Start("c", current, run); !errors.Is(err, ErrBusy) {
			t.Fatalf("third job: %v, want ErrBusy", err)
		}
		if ok, err := j.Cancel(context.Background(), "local", "a"); err != nil || !ok {
			t.Fatal("cancel found no job")
		}
		if got := <-causes; !errors.Is(got, ErrCancelled) {
			t.Fatalf("cancel cause %v", got)
		}
		if _, ok := j.Log("a"); ok || j.Running() != 1 {
			t.Fatal("a cancelled job is still listed")
		}
		if _, err := j.Start("c", current, run); err != nil {
			t.Fatalf("a freed slot is refused: %v", err)
		}
		if ok, _ := j.Cancel(context.Background(), "local", "nope"); ok {
			t.Fatal("cancelled a job that does not exist")
		}
		j.Close()
		if j.Running() != 0 {
			t.Fatal("jobs left after Close")
		}
		if _, err := j.Start("d", current, run); err == nil {
			t.Fatal("a closed runner started a job")
		}
	})
}
