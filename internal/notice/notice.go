// Package notice is the desktop companion's notification policy, pure:
// which events become a notification, how a burst of them becomes one,
// and how long the same thing stays quiet after it was said (cooldowns
// the companion keeps across its restarts). It does no I/O and reads no
// clock: the caller passes the time.
package notice

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Category groups events a person may switch off as a whole.
type Category string

// Categories.
const (
	// Plan: a plan window at a threshold, extra usage begun.
	Plan Category = "plan"
	// Accounts: a profile benched, back, logged out.
	Accounts Category = "accounts"
	// Budget: an API key's spend at its mark or budget.
	Budget Category = "budget"
	// Gateway: the gateway down, back or restarted.
	Gateway Category = "gateway"
	// Recovery: restarts exhausted. Critical, and never switched off.
	Recovery Category = "recovery"
)

// Categories are every category, in the order a settings list shows them.
var Categories = []Category{Plan, Accounts, Budget, Gateway, Recovery}

// Event is one thing the companion may tell. Key names it: the same key
// inside its cooldown is not told again.
type Event struct {
	Key      string
	Category Category
	Title    string
	Body     string
	Critical bool
	At       time.Time
}

// Note is one notification to show: an event, or a burst of them.
type Note struct {
	Title, Body string
	Critical    bool
	// Count is how many events it tells (more than 1: coalesced).
	Count int
}

// Policy is what a person chose and the bounds of a burst.
type Policy struct {
	// Off are the categories not shown (Recovery is shown regardless).
	Off map[Category]bool
	// Quiet ends a burst: events are held until none came for this long.
	Quiet time.Duration
	// Hold bounds how long the first event of a burst waits.
	Hold time.Duration
	// Cooldown is how long an event's key stays quiet after it was told.
	Cooldown time.Duration
}

// DefaultPolicy holds a burst until 1.5 s pass without another event (at
// most 10 s) and keeps a told event quiet for an hour.
func DefaultPolicy() Policy {
	return Policy{Quiet: 1500 * time.Millisecond, Hold: 10 * time.Second, Cooldown: time.Hour}
}

// State is the policy's memory: when each key was last told (what the
// companion persists) and the burst under way.
type State struct {
	// Told is when each key was last told.
	Told    map[string]time.Time `json:"told"`
	pending []Event
	first   time.Time // when the burst under way began
	last    time.Time // its latest event
}

// Offer takes an event. A critical one is told at once (and returned);
// one switched off or inside its key's cooldown is dropped; the rest
// join the burst under way, told by Due.
func (s *State) Offer(p Policy, e Event) []Note {
	if p.Off[e.Category] && e.Category != Recovery && !e.Critical {
		return nil
	}
	if at, ok := s.Told[e.Key]; ok && e.Key != "" && e.At.Before(at.Add(p.Cooldown)) && !e.Critical {
		return nil
	}
	if slices.ContainsFunc(s.pending, func(o Event) bool { return e.Key != "" && o.Key == e.Key }) {
		return nil // already in this burst
	}
	if e.Critical {
		s.told(e)
		return []Note{{Title: e.Title, Body: e.Body, Critical: true, Count: 1}}
	}
	if len(s.pending) == 0 {
		s.first = e.At
	}
	s.pending = append(s.pending, e)
	s.last = e.At
	return nil
}

func (s *State) told(e Event) {
	if e.Key == "" {
		return
	}
	if s.Told == nil {
		s.Told = map[string]time.Time{}
	}
	s.Told[e.Key] = e.At
}

// Next is when Due has something to tell (zero: nothing held).
func (s *State) Next(p Policy) time.Time {
	if len(s.pending) == 0 {
		return time.Time{}
	}
	quiet, hold := s.last.Add(p.Quiet), s.first.Add(p.Hold)
	if hold.Before(quiet) {
		return hold
	}
	return quiet
}

// maxLines bounds the events a coalesced note lists by title.
const maxLines = 5

// Due tells the burst under way once it is over: one note for one event,
// one coalesced note for several.
func (s *State) Due(p Policy, now time.Time) []Note {
	if len(s.pending) == 0 || now.Before(s.Next(p)) {
		return nil
	}
	burst := s.pending
	s.pending = nil
	for _, e := range burst {
		s.told(e)
	}
	if len(burst) == 1 {
		return []Note{{Title: burst[0].Title, Body: burst[0].Body, Count: 1}}
	}
	var b strings.Builder
	for i, e := range burst {
		if i == maxLines {
			fmt.Fprintf(&b, "… and %d more", len(burst)-maxLines)
			break
		}
		b.WriteString(e.Title)
		b.WriteByte('\n')
	}
	return []Note{{Title: fmt.Sprintf("Meridian: %d updates", len(burst)), Body: strings.TrimSpace(b.String()), Count: len(burst)}}
}

// Forget drops the cooldowns that ended before now, so what is kept
// stays bounded.
func (s *State) Forget(p Policy, now time.Time) {
	maps.DeleteFunc(s.Told, func(_ string, at time.Time) bool { return !now.Before(at.Add(p.Cooldown)) })
}
