// Package spareplan decides how many spare processes each start-time
// contract gets, and when one may be started. It is a pure core: the
// gateway feeds it arrivals and what the machine is doing, and starts
// what it says.
//
// Demand is the number of new conversations of a contract whose first
// turns ran at the same time: that many spares would have served them all.
// A burst's size is remembered for an hour, halving every 15 minutes, so a
// harness that fans out ten subagents finds ten spares the next time, and
// one-off prompts sent one after another (each alone in flight) never ask
// for more than one.
package spareplan

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// Memory of demand.
const (
	// HalfLife is how fast a burst's size is forgotten.
	HalfLife = 15 * time.Minute
	// Horizon is when it is forgotten altogether.
	Horizon = time.Hour
)

// Demand tracks the overlapping first turns of each contract. The zero
// value is ready; it is not safe for concurrent use.
type Demand struct {
	contracts map[string]*contract
}

type contract struct {
	inFlight int
	// peaks holds the bursts that may still decide the demand: oldest
	// first, each larger than every later one (a later burst at least as
	// large makes an earlier one irrelevant, as it decays sooner).
	peaks []peak
}

type peak struct {
	at   time.Time
	size int
}

// Arrive records a new conversation's first turn starting.
func (d *Demand) Arrive(key string, now time.Time) {
	if d.contracts == nil {
		d.contracts = map[string]*contract{}
	}
	c := d.contracts[key]
	if c == nil {
		c = &contract{}
		d.contracts[key] = c
	}
	c.inFlight++
	n := c.inFlight
	keep := c.peaks[:0]
	for _, p := range c.peaks {
		if p.size > n {
			keep = append(keep, p)
		}
	}
	c.peaks = append(keep, peak{at: now, size: n})
}

// Leave records a first turn ending (answered or not).
func (d *Demand) Leave(key string) {
	if c := d.contracts[key]; c != nil && c.inFlight > 0 {
		c.inFlight--
	}
}

// Want is how many spares the contract's recent bursts call for now.
func (d *Demand) Want(key string, now time.Time) int {
	c := d.contracts[key]
	if c == nil {
		return 0
	}
	best := 0.0
	for _, p := range c.peaks {
		age := now.Sub(p.at)
		if age >= Horizon {
			continue
		}
		best = max(best, float64(p.size)*math.Exp2(-max(age, 0).Seconds()/HalfLife.Seconds()))
	}
	return int(math.Round(best))
}

// Wants reports every contract's demand, forgetting those with none left
// and nothing in flight.
func (d *Demand) Wants(now time.Time) map[string]int {
	out := map[string]int{}
	for k, c := range d.contracts {
		c.peaks = slices.DeleteFunc(c.peaks, func(p peak) bool { return now.Sub(p.at) >= Horizon })
		if len(c.peaks) == 0 && c.inFlight == 0 {
			delete(d.contracts, k)
			continue
		}
		if w := d.Want(k, now); w > 0 {
			out[k] = w
		}
	}
	return out
}

// Limits bound the spares of all contracts together.
type Limits struct {
	Min, Max int
}

// Plan gives each contract its number of spares. The contract recent
// starts used most (top; may be empty) gets at least Min; any other gets
// spares only for a burst (a demand of two or more), as one stray start
// of an unusual contract is no reason to keep a process for it. The total
// is at most Max, the largest demands served first.
func Plan(wants map[string]int, top string, l Limits) map[string]int {
	type want struct {
		key string
		n   int
	}
	var all []want
	for k, n := range wants {
		if k == top {
			n = max(n, l.Min)
		} else if n < 2 {
			continue
		}
		all = append(all, want{k, n})
	}
	if _, ok := wants[top]; !ok && top != "" && l.Min > 0 {
		all = append(all, want{top, l.Min})
	}
	// The top contract first among equals, then by key: the same plan
	// every time for the same demand.
	slices.SortFunc(all, func(a, b want) int {
		if c := cmp.Compare(b.n, a.n); c != 0 {
			return c
		}
		if (a.key == top) != (b.key == top) {
			if a.key == top {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.key, b.key)
	})
	out := map[string]int{}
	left := l.Max
	for _, w := range all {
		n := min(w.n, left)
		if n <= 0 {
			break
		}
		out[w.key] = n
		left -= n
	}
	return out
}

// Machine is what the machine is doing when a spare could start.
type Machine struct {
	Running int // turns running
	Waiting int // requests waiting for a process slot
	Cores   int
	// Available is the memory the system has free; Need what it must keep
	// free with one more spare started.
	Available, Need int64
	// LastBusy is when turns last ran on every core (zero: never), Now the
	// time it is.
	LastBusy, Now time.Time
}

// calmAfterBusy is how long after turns ran on every core a spare still
// waits: a burst's last turns end raggedly, and the work that follows a
// burst (a harness's next fan-out) comes at once, before a spare started
// in that gap could be ready.
const calmAfterBusy = time.Second

// MayStart says whether a spare may be started now, and if not why. A
// spare is started in idle time only: its start costs most of a second of
// CPU, which a running turn or a waiting request needs more.
func MayStart(m Machine) (bool, string) {
	switch {
	case m.Waiting > 0:
		return false, "requests are waiting for a process slot"
	case m.Running >= max(m.Cores, 1):
		return false, "turns are running on every core"
	case !m.LastBusy.IsZero() && m.Now.Sub(m.LastBusy) < calmAfterBusy:
		return false, "turns ran on every core a moment ago"
	case m.Available < m.Need:
		return false, "the machine is short of memory"
	}
	return true, ""
}

// NextStart is when a spare beyond the minimum may start under a CPU
// budget, a share of one core: the last such start's cost, spread at that
// share from when it began. Over any window, starts then use at most the
// budget (and one start's cost). A budget of 0 or less sets no limit.
func NextStart(last time.Time, cost time.Duration, budget float64) time.Time {
	if budget <= 0 || last.IsZero() {
		return last
	}
	return last.Add(time.Duration(float64(cost) / budget))
}
