// Package spawn is the pure core of background child agents: statuses and
// the transitions between them, who may write a terminal status, what a
// lead is owed, what the reaper decides, and the header-only text that
// tells a lead a child finished. It does no I/O.
package spawn

import (
	"fmt"
	"slices"
	"time"
)

// Status of a spawn.
type Status string

// Statuses: queued, running and finalizing are active; the rest terminal.
const (
	Queued     Status = "queued"
	Running    Status = "running"
	Finalizing Status = "finalizing"
	Succeeded  Status = "succeeded"
	Failed     Status = "failed"
	Cancelled  Status = "cancelled"
)

// Active reports whether a spawn in this status may still change.
func (s Status) Active() bool { return s == Queued || s == Running || s == Finalizing }

// Terminal reports whether the status is final.
func (s Status) Terminal() bool { return s == Succeeded || s == Failed || s == Cancelled }

// Valid reports whether s is a known status.
func (s Status) Valid() bool { return s.Active() || s.Terminal() }

// CanTransition reports whether a spawn may move from one status to
// another. queued may become running or end; running may start finalizing
// or end; finalizing may only end. Terminal statuses never change.
func CanTransition(from, to Status) bool {
	switch from {
	case Queued:
		return to == Running || to.Terminal()
	case Running:
		return to == Finalizing || to.Terminal()
	case Finalizing:
		return to.Terminal()
	}
	return false
}

// Origin names who writes a terminal status.
type Origin string

// Origins. The runner (the worker driving the CLI), the launcher (create),
// a launch failure and a cancel are authoritative; the reconciler (the
// reaper, guessing from outside) is not.
const (
	Runner        Origin = "runner"
	Launcher      Origin = "launcher"
	LaunchFailure Origin = "launch_failure"
	Cancel        Origin = "cancel"
	Reconciler    Origin = "reconciler"
)

// Authoritative reports whether an origin's terminal write is a fact
// rather than a guess.
func (o Origin) Authoritative() bool {
	return o == Runner || o == Launcher || o == LaunchFailure || o == Cancel
}

// TerminalWins decides whether a terminal write by origin replaces the
// current state. Among authoritative writers the first wins; an
// authoritative writer replaces the reconciler's guess, even later; among
// reconcilers the first wins.
func TerminalWins(current Status, currentOrigin, writer Origin) bool {
	if !current.Terminal() {
		return true
	}
	return writer.Authoritative() && !currentOrigin.Authoritative()
}

// Spawn is what the core needs to know about one spawn.
type Spawn struct {
	ID       string
	N        int // the number in the id, for ordering
	ParentID string
	Status   Status
	Origin   Origin
	Model    string
	Cwd      string
	Desc     string
	Error    string // failure reason
	ExitCode int
	Created  time.Time
	Finished time.Time
	Duration time.Duration
	CostUSD  float64
	InTok    int
	OutTok   int
}

// Owed returns a lead's children it has not been told about: direct
// children that are terminal, not consumed by the lead, and not leased by
// a running wait. Oldest first.
func Owed(lead string, spawns []Spawn, consumed, leased map[string]bool) []Spawn {
	var out []Spawn
	for _, s := range spawns {
		if s.ParentID == lead && s.Status.Terminal() && !consumed[s.ID] && !leased[s.ID] {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b Spawn) int { return compareAge(a, b) })
	return out
}

// ActiveChildren returns a lead's direct children still running.
func ActiveChildren(lead string, spawns []Spawn) []Spawn {
	var out []Spawn
	for _, s := range spawns {
		if s.ParentID == lead && s.Status.Active() {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b Spawn) int { return compareAge(a, b) })
	return out
}

// compareAge orders by finish time, then by creation order.
func compareAge(a, b Spawn) int {
	if !a.Finished.Equal(b.Finished) {
		if a.Finished.Before(b.Finished) {
			return -1
		}
		return 1
	}
	return a.N - b.N
}

// ParseID reads the number of an id "p12".
func ParseID(id string) (int, error) {
	var n int
	if _, err := fmt.Sscanf(id, "p%d", &n); err != nil || n < 1 || fmt.Sprintf("p%d", n) != id {
		return 0, fmt.Errorf("%q is not a spawn id (p1, p2, …)", id)
	}
	return n, nil
}
