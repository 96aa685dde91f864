package httpapi_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/backend/claude"
	"github.com/meridian-gw/meridian/internal/gateway"
	"github.com/meridian-gw/meridian/internal/testkit"
)

// countingLauncher starts real CLIs and counts them; when failing, it
// starts none (a CLI that cannot be run).
type countingLauncher struct {
	n    atomic.Int32
	fail bool
}

func (l *countingLauncher) Launch(spec claude.Spec) (claude.Proc, error) {
	l.n.Add(1)
	if l.fail {
		return nil, errors.New("exec /home/someone/bin/claude: permission denied")
	}
	return claude.ExecLauncher{}.Launch(spec)
}

type quotaAnswer struct {
	Profiles []struct {
		Profile string               `json:"profile"`
		Plan    *gateway.PlanReading `json:"plan"`
	} `json:"profiles"`
}

// The plan's limits come from the real CLI's /usage (get_usage): an
// API-key login has none, which it says. Eight callers at once cause one
// probe, and the next callers are served from it. A caller waits a few
// seconds at most: on a machine slow to start the CLI, the first may be
// told the reading is still being taken, never that it failed.
func TestQuotaReadsThePlanOnce(t *testing.T) {
	t.Parallel()
	launches := &countingLauncher{}
	s := newStack(t, stackOptions{launcher: launches})
	var wg sync.WaitGroup
	answers := make([]quotaAnswer, 8)
	for i := range answers {
		wg.Go(func() { getJSON(t, s.URL+"/v1/usage/quota", nil, &answers[i]) })
	}
	wg.Wait()
	for _, a := range answers {
		if len(a.Profiles) != 1 || a.Profiles[0].Plan == nil {
			t.Fatalf("answer %+v", a)
		}
		if p := a.Profiles[0].Plan; p.Stale && p.Error != "a new reading is still being taken" {
			t.Fatalf("plan %+v", p)
		}
	}
	var last quotaAnswer
	if err := testkit.WaitFor(30*time.Second, func() error {
		getJSON(t, s.URL+"/v1/usage/quota", nil, &last)
		if p := last.Profiles[0].Plan; p.Stale || p.Available || p.ObservedAt.IsZero() || p.Error != "" {
			return fmt.Errorf("plan %+v", p)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n := launches.n.Load(); n != 1 {
		t.Fatalf("%d CLIs started for the quota calls, want 1", n)
	}
}

// A probe that fails is answered with the reading marked stale and why,
// never a local path.
func TestQuotaMarksAFailedReadingStale(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{launcher: &countingLauncher{fail: true}})
	var a quotaAnswer
	getJSON(t, s.URL+"/v1/usage/quota", nil, &a)
	p := a.Profiles[0].Plan
	if p == nil || !p.Stale || !strings.Contains(p.Error, "the latest reading failed") || strings.Contains(p.Error, "/home") {
		t.Fatalf("plan %+v", p)
	}
}
