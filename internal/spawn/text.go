package spawn

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Harness is the worker kind every spawn runs today.
const Harness = "claude"

// Lookup is the command that shows a spawn's report.
func Lookup(id string) string { return "meridian spawn show " + id }

// Header renders what a lead needs to know that a child finished, and
// nothing of its report: status and outcome, the worker (harness and
// model), the failure reason, the task directory when it is not the
// lead's, and the exact command that shows the report.
func Header(s Spawn, leadCwd string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", s.ID, s.Status)
	if s.Status.Terminal() && s.ExitCode != 0 {
		fmt.Fprintf(&b, " (exit %d)", s.ExitCode)
	}
	fmt.Fprintf(&b, " · worker %s (%s)", Harness, modelName(s.Model))
	if s.Duration > 0 {
		fmt.Fprintf(&b, " · %s", roundDuration(s.Duration))
	}
	if s.Desc != "" {
		fmt.Fprintf(&b, " · %s", Clip(s.Desc, 300))
	}
	b.WriteByte('\n')
	if s.Error != "" {
		fmt.Fprintf(&b, "  failure: %s\n", Clip(s.Error, 300))
	}
	if s.Cwd != "" && s.Cwd != leadCwd {
		fmt.Fprintf(&b, "  task directory: %s\n", s.Cwd)
	}
	fmt.Fprintf(&b, "  report: %s\n", Lookup(s.ID))
	return b.String()
}

// Summary is one line about a spawn, for listings: id, status, worker,
// duration and cost once known, and its description.
func Summary(s Spawn) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-5s %-10s %s (%s)", s.ID, s.Status, Harness, modelName(s.Model))
	if s.Duration > 0 {
		fmt.Fprintf(&b, " · %s", roundDuration(s.Duration))
	}
	if s.CostUSD > 0 {
		fmt.Fprintf(&b, " · $%.4f", s.CostUSD)
	}
	if s.Error != "" {
		fmt.Fprintf(&b, " · %s", Clip(s.Error, 80))
	}
	if s.Desc != "" {
		fmt.Fprintf(&b, " · %s", Clip(s.Desc, 80))
	}
	return b.String()
}

// roundDuration keeps tenths of a second for short runs, seconds for long.
func roundDuration(d time.Duration) time.Duration {
	if d < time.Minute {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Second)
}

func modelName(m string) string {
	if m == "" {
		return "default model"
	}
	return m
}

// DeliveryText renders a batch of finished children for their lead.
func DeliveryText(spawns []Spawn, leadCwd string) string {
	if len(spawns) == 0 {
		return ""
	}
	var b strings.Builder
	if len(spawns) == 1 {
		b.WriteString("A background spawn finished:\n")
	} else {
		fmt.Fprintf(&b, "%d background spawns finished:\n", len(spawns))
	}
	for _, s := range spawns {
		b.WriteString(Header(s, leadCwd))
	}
	return b.String()
}

// Clip keeps a value on one line and bounds it to about max bytes,
// cutting at a character boundary.
func Clip(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= max {
		return s
	}
	for max > 0 && !utf8.RuneStart(s[max]) {
		max--
	}
	return s[:max] + "…"
}

// ReapFacts is what the reaper knows about an active spawn.
type ReapFacts struct {
	Status Status
	// RunnerAlive: the recorded runner process exists and is the same
	// process (its start time matches), not a reused pid.
	RunnerAlive bool
	Created     time.Time
	// LastActivity is the freshest touch of the spawn's artifacts.
	LastActivity time.Time
	// ReportComplete: a report was written in full.
	ReportComplete bool
	// Primary: the spawn is a lead's own session (meridian claude), whose
	// runner is the session itself and which writes no artifacts.
	Primary bool
	Now     time.Time
	Window  time.Duration // how long artifacts must be untouched
	Grace   time.Duration // how young a spawn is left alone
}

// Reap defaults.
const (
	DefaultReapWindow = 120 * time.Second
	DefaultReapGrace  = 15 * time.Second
	// HeartbeatEvery is how often a worker touches its heartbeat; well
	// inside the reap window.
	HeartbeatEvery = 30 * time.Second
	// DefaultRetention is how long a finished spawn's folder (its report
	// and logs) is kept once its lead has seen it.
	DefaultRetention = 7 * 24 * time.Hour
)

// Prunable reports whether a finished spawn's folder may be deleted: its
// lead has seen it (a child still owed is kept, whatever its age) and it
// ended at least retention ago.
func Prunable(s Spawn, seen bool, now time.Time, retention time.Duration) bool {
	return s.Status.Terminal() && seen && !s.Finished.IsZero() && now.Sub(s.Finished) >= retention
}

// ReapDecision is the reaper's verdict: finalize with Status and Reason, or
// leave the spawn alone.
type ReapDecision struct {
	Act    bool
	Status Status
	Reason string
}

// Reap decides about an active spawn whose runner may have died. It acts
// only on a dead runner, artifacts untouched for the window, and a spawn
// older than the grace; a complete report means the work was done. A
// primary's session ending is its normal end: meridian claude execs the
// CLI, so nothing else is left to record it.
func Reap(f ReapFacts) ReapDecision {
	if !f.Status.Active() || f.RunnerAlive {
		return ReapDecision{}
	}
	if f.Primary {
		if f.Now.Sub(f.Created) < f.Grace {
			return ReapDecision{}
		}
		return ReapDecision{Act: true, Status: Succeeded}
	}
	if f.Now.Sub(f.Created) < f.Grace || f.Now.Sub(f.LastActivity) < f.Window {
		return ReapDecision{}
	}
	if f.ReportComplete {
		return ReapDecision{Act: true, Status: Succeeded}
	}
	reason := "orphan_run"
	if f.Status == Finalizing {
		reason = "orphan_finalization"
	}
	return ReapDecision{Act: true, Status: Failed, Reason: reason}
}

// MatchingLines returns the lines of a report that contain query, ignoring
// case.
func MatchingLines(report, query string) []string {
	var out []string
	q := strings.ToLower(query)
	for _, l := range strings.Split(report, "\n") {
		if strings.Contains(strings.ToLower(l), q) {
			out = append(out, l)
		}
	}
	return out
}
