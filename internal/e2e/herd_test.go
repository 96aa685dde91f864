package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// inFlight counts the upstream calls of the turns whose text holds a word
// while they run, and the most at once.
type inFlight struct {
	now, most, calls atomic.Int32
}

// hold answers such a call after d, counting it meanwhile.
func (f *inFlight) hold(d time.Duration, text string) testkit.Reply {
	n := f.now.Add(1)
	f.calls.Add(1)
	for {
		m := f.most.Load()
		if n <= m || f.most.CompareAndSwap(m, n) {
			break
		}
	}
	gate := make(chan struct{})
	time.AfterFunc(d, func() {
		f.now.Add(-1)
		close(gate)
	})
	return testkit.Reply{Text: text, Gate: gate}
}

// Twenty first turns of one conversation the client named, sent at once,
// run one at a time: never two upstream together, each answered (the
// the promise of docs/conversations.md: one turn at a time, 409 only after --turn-wait).
// Requests that name no conversation still run side by side.
func TestFirstTurnsOfANamedConversationTakeTurns(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	var herd, loose inFlight
	looseGate := make(chan struct{})
	g.up.Respond(func(r testkit.Request) testkit.Reply {
		switch text := r.AllText(); {
		case strings.Contains(text, "herd"):
			return herd.hold(150*time.Millisecond, "one answer")
		case strings.Contains(text, "loose"):
			loose.now.Add(1)
			loose.calls.Add(1)
			return testkit.Reply{Text: "loose answer", Gate: looseGate}
		}
		return testkit.Reply{Text: "ok"}
	})
	g.start("--turn-wait", "120s")
	statuses := make([]int, 20)
	var wg sync.WaitGroup
	for i := range statuses {
		wg.Go(func() {
			resp, body, err := g.post(prompt("a herd of first turns"), "X-Claude-Code-Session-Id", "herd-1")
			if err != nil {
				t.Errorf("request %d: %v", i, err)
				return
			}
			statuses[i] = resp.StatusCode
			if resp.StatusCode != http.StatusOK {
				t.Errorf("request %d: %d %s", i, resp.StatusCode, body)
			}
		})
	}
	wg.Wait()
	if most := herd.most.Load(); most != 1 {
		t.Fatalf("%d upstream turns of one conversation ran at once, want 1 (statuses %v)", most, statuses)
	}
	if n := herd.calls.Load(); n != 20 {
		t.Fatalf("%d upstream turns for 20 requests", n)
	}
	// Three requests that name nothing are each their own conversation:
	// all three reach the upstream together.
	var loosed sync.WaitGroup
	for range 3 {
		loosed.Go(func() {
			if resp, body, err := g.post(prompt("a loose one-off")); err != nil || resp.StatusCode != http.StatusOK {
				t.Errorf("a headerless request: %v %v %s", resp, err, body)
			}
		})
	}
	err := testkit.WaitFor(60*time.Second, func() error {
		if n := loose.now.Load(); n < 3 {
			return fmt.Errorf("%d headerless requests upstream at once", n)
		}
		return nil
	})
	close(looseGate)
	loosed.Wait()
	if err != nil {
		t.Fatal(err)
	}
}

// With a short --turn-wait the herd's late turns are refused with 409 and
// a wait, never run beside another; what ran is what was answered.
func TestFirstTurnsPastTheTurnWaitGet409(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	var herd inFlight
	g.up.Respond(func(r testkit.Request) testkit.Reply {
		if strings.Contains(r.AllText(), "herd") {
			return herd.hold(400*time.Millisecond, "one answer")
		}
		return testkit.Reply{Text: "ok"}
	})
	g.start("--turn-wait", "1s")
	var ok, refused atomic.Int32
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Go(func() {
			resp, body, err := g.post(prompt("a herd of first turns"), "X-Claude-Code-Session-Id", "herd-2")
			switch {
			case err != nil:
				t.Errorf("request %d: %v", i, err)
			case resp.StatusCode == http.StatusOK:
				ok.Add(1)
			case resp.StatusCode == http.StatusConflict && resp.Header.Get("Retry-After") != "" && strings.Contains(body, "conflict_error"):
				refused.Add(1)
			default:
				t.Errorf("request %d: %d %s", i, resp.StatusCode, body)
			}
		})
	}
	wg.Wait()
	if most := herd.most.Load(); most != 1 {
		t.Fatalf("%d upstream turns of one conversation ran at once", most)
	}
	if ok.Load() == 0 || refused.Load() == 0 || herd.calls.Load() != ok.Load() {
		t.Fatalf("%d answered, %d refused, %d upstream turns", ok.Load(), refused.Load(), herd.calls.Load())
	}
}
