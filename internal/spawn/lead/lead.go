// Package lead is what a lead does with its children: create them, look
// at them, wait for them, cancel them, and learn — through collect and
// ack, or through any command that shows a finished child's report — which
// of them it has seen. Consumption follows one rule everywhere: only the
// child's own lead consumes, only a terminal result it was shown, never
// with --no-observe, never through -C.
package lead

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/meridian-gw/meridian/internal/procident"
	"github.com/meridian-gw/meridian/internal/spawn"
	"github.com/meridian-gw/meridian/internal/spawn/registry"
	"github.com/meridian-gw/meridian/internal/spawn/runner"
)

// Lead is the caller acting on its project's spawns.
type Lead struct {
	Registry *registry.Registry
	// Project identifies the spawns' project (a directory).
	Project string
	// ID is the caller's own spawn id (MERIDIAN_SPAWN_ID); "" is the
	// project's root lead: a person at a terminal, a script.
	ID    string
	Depth int // the caller's MERIDIAN_DEPTH
	// ReadOnly is set by -C: look, never consume.
	ReadOnly bool
	// Cwd is the caller's working directory.
	Cwd string
	// SpawnsDir holds the artifacts folders of every project.
	SpawnsDir string
	MaxDepth  int
	// Reaping: how long a dead runner's artifacts must be untouched, and
	// how young a spawn is left alone.
	ReapWindow time.Duration
	ReapGrace  time.Duration
	// Retention keeps a finished spawn's folder this long once its lead
	// has seen it (0: spawn.DefaultRetention).
	Retention time.Duration
	// CancelWait bounds how long cancel waits for a worker to finalize.
	CancelWait time.Duration
	Log        *slog.Logger
	Now        func() time.Time
}

// DefaultMaxDepth bounds how deep spawns may nest.
const DefaultMaxDepth = 3

func (l *Lead) now() time.Time {
	if l.Now == nil {
		return time.Now()
	}
	return l.Now()
}

func (l *Lead) log() *slog.Logger {
	if l.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l.Log
}

// Dir is the artifacts folder of one of the project's spawns.
func (l *Lead) Dir(id string) string {
	sum := sha256.Sum256([]byte(l.Project))
	return filepath.Join(l.SpawnsDir, filepath.Base(l.Project)+"-"+hex.EncodeToString(sum[:6]), id)
}

// Spec is what a new spawn runs.
type Spec struct {
	Prompt string
	Model  string
	Cwd    string
	Desc   string
}

// ErrTooDeep refuses a spawn beyond the depth limit.
var ErrTooDeep = errors.New("spawn depth limit reached")

// Create records a new child of the caller, queued for its worker.
func (l *Lead) Create(ctx context.Context, s Spec) (registry.Row, error) {
	max := l.MaxDepth
	if max <= 0 {
		max = DefaultMaxDepth
	}
	if l.Depth+1 > max {
		return registry.Row{}, fmt.Errorf("%w: this caller is at depth %d and spawns may nest %d deep; do the task directly", ErrTooDeep, l.Depth, max)
	}
	if s.Cwd == "" {
		s.Cwd = l.Cwd
	}
	row := registry.Row{
		Spawn:   spawn.Spawn{ParentID: l.ID, Model: s.Model, Cwd: s.Cwd, Desc: s.Desc},
		Project: l.Project, Depth: l.Depth + 1, Prompt: s.Prompt,
	}
	row, err := l.Registry.Create(ctx, row, l.Dir)
	if err == nil {
		// Each new spawn tidies up after old ones.
		if _, perr := l.PruneFolders(ctx); perr != nil {
			l.log().Warn("could not prune old spawn folders", "err", perr)
		}
	}
	return row, err
}

// maxPrune bounds the folders one prune deletes.
const maxPrune = 100

// PruneFolders deletes the folders of the project's spawns that finished
// more than Retention ago and that their lead has seen; an owed child's
// folder is never deleted. The rows stay. It reports how many it deleted.
func (l *Lead) PruneFolders(ctx context.Context) (int, error) {
	if l.ReadOnly {
		return 0, nil
	}
	retention := l.Retention
	if retention <= 0 {
		retention = spawn.DefaultRetention
	}
	rows, err := l.Registry.List(ctx, l.Project)
	if err != nil {
		return 0, err
	}
	seenBy := map[string]map[string]bool{} // lead → the children it has seen
	now, n := l.now(), 0
	for _, row := range rows {
		if n == maxPrune || !row.Status.Terminal() || row.Dir == "" {
			continue
		}
		seen := row.Kind == registry.KindPrimary // owed to nobody
		if !seen {
			consumed, ok := seenBy[row.ParentID]
			if !ok {
				if consumed, err = l.Registry.Consumed(ctx, l.Project, row.ParentID); err != nil {
					return n, err
				}
				seenBy[row.ParentID] = consumed
			}
			seen = consumed[row.ID]
		}
		if !spawn.Prunable(row.Spawn, seen, now, retention) {
			continue
		}
		if _, err := os.Stat(row.Dir); err != nil {
			continue
		}
		if err := os.RemoveAll(row.Dir); err != nil {
			return n, fmt.Errorf("prune %s: %w", row.ID, err)
		}
		n++
	}
	return n, nil
}

// StartPrimary records the caller's own session (meridian claude) as a
// running primary spawn whose runner is the session's process: the
// session's children name it as their lead. It is nobody's child.
func (l *Lead) StartPrimary(ctx context.Context, desc string, pid int, start uint64) (registry.Row, error) {
	row := registry.Row{
		Spawn:   spawn.Spawn{ParentID: l.ID, Status: spawn.Running, Cwd: l.Cwd, Desc: desc},
		Project: l.Project, Depth: l.Depth, Kind: registry.KindPrimary, RunnerPID: pid, RunnerStart: start,
	}
	return l.Registry.Create(ctx, row, l.Dir)
}

// LaunchFailed finalizes a spawn whose worker could not start.
func (l *Lead) LaunchFailed(ctx context.Context, id string, err error) error {
	_, ferr := l.Registry.Finalize(ctx, l.Project, id, registry.Final{Status: spawn.Failed, Origin: spawn.LaunchFailure, ExitCode: 2, Error: "launch: " + err.Error()})
	return ferr
}

// Reconcile finalizes active spawns whose runner died and left their
// artifacts untouched. Nested callers (depth > 0) never reap: only a
// root-side process decides about others' runs.
func (l *Lead) Reconcile(ctx context.Context) {
	if l.Depth > 0 {
		return
	}
	active, err := l.Registry.Active(ctx, l.Project)
	if err != nil {
		l.log().Warn("reaper: read active spawns", "err", err)
		return
	}
	window, grace := l.ReapWindow, l.ReapGrace
	if window <= 0 {
		window = spawn.DefaultReapWindow
	}
	if grace <= 0 {
		grace = spawn.DefaultReapGrace
	}
	for _, row := range active {
		art := runner.Artifacts(row.Dir)
		d := spawn.Reap(spawn.ReapFacts{
			Status: row.Status, RunnerAlive: procident.Alive(row.RunnerPID, row.RunnerStart), Created: row.Created,
			LastActivity: art.LastActivity(), ReportComplete: art.ReportComplete(), Primary: row.Kind == registry.KindPrimary,
			Now: l.now(), Window: window, Grace: grace,
		})
		if !d.Act {
			continue
		}
		won, err := l.Registry.Finalize(ctx, l.Project, row.ID, registry.Final{Status: d.Status, Origin: spawn.Reconciler, ExitCode: exitFor(d.Status), Error: d.Reason})
		if err == nil && won {
			l.log().Info("reaped a spawn whose runner died", "spawn", row.ID, "status", d.Status, "reason", d.Reason)
		}
	}
}

func exitFor(s spawn.Status) int {
	if s == spawn.Succeeded {
		return 0
	}
	return 1
}

// Get returns a spawn after reaping.
func (l *Lead) Get(ctx context.Context, id string) (registry.Row, error) {
	if _, err := spawn.ParseID(id); err != nil {
		return registry.Row{}, err
	}
	l.Reconcile(ctx)
	return l.Registry.Get(ctx, l.Project, id)
}

// getAll returns spawns by id after reaping once; any unknown or
// malformed id fails the whole call.
func (l *Lead) getAll(ctx context.Context, ids []string) ([]registry.Row, error) {
	for _, id := range ids {
		if _, err := spawn.ParseID(id); err != nil {
			return nil, err
		}
	}
	l.Reconcile(ctx)
	rows := make([]registry.Row, len(ids))
	for i, id := range ids {
		var err error
		if rows[i], err = l.Registry.Get(ctx, l.Project, id); err != nil {
			return nil, err
		}
	}
	return rows, nil
}

// Show returns a spawn and its report; a terminal result shown is
// consumed unless observe is false.
func (l *Lead) Show(ctx context.Context, id string, observe bool) (registry.Row, string, error) {
	row, err := l.Get(ctx, id)
	if err != nil {
		return row, "", err
	}
	report := runner.Artifacts(row.Dir).ReadReport()
	return row, report, l.consume(ctx, "show", observe, row)
}

// List returns the caller's direct children, or every spawn of the project
// with all, optionally of one status. Listing never consumes.
func (l *Lead) List(ctx context.Context, status spawn.Status, all bool) ([]registry.Row, error) {
	if status != "" && !status.Valid() {
		return nil, fmt.Errorf("unknown status %q: want queued, running, finalizing, succeeded, failed or cancelled", status)
	}
	l.Reconcile(ctx)
	var rows []registry.Row
	var err error
	if all {
		rows, err = l.Registry.List(ctx, l.Project)
	} else {
		rows, err = l.Registry.Children(ctx, l.Project, l.ID)
	}
	if err != nil || status == "" {
		return rows, err
	}
	var out []registry.Row
	for _, r := range rows {
		if r.Status == status {
			out = append(out, r)
		}
	}
	return out, nil
}

// Status returns spawns (the caller's children when no ids are given),
// with report bodies when full; only full consumes.
func (l *Lead) Status(ctx context.Context, ids []string, full, observe bool) ([]registry.Row, []string, error) {
	var rows []registry.Row
	if len(ids) == 0 {
		var err error
		if rows, err = l.List(ctx, "", false); err != nil {
			return nil, nil, err
		}
	} else {
		var err error
		if rows, err = l.getAll(ctx, ids); err != nil {
			return nil, nil, err
		}
	}
	reports := make([]string, len(rows))
	if !full {
		return rows, reports, nil
	}
	for i, r := range rows {
		reports[i] = runner.Artifacts(r.Dir).ReadReport()
	}
	return rows, reports, l.consume(ctx, "status", observe, rows...)
}

// Match is a report line that matched a search.
type Match struct {
	ID   string `json:"id"`
	Line string `json:"line"`
}

// Search finds report lines across the project's spawns; it never
// consumes.
func (l *Lead) Search(ctx context.Context, query string) ([]Match, error) {
	if query == "" {
		return nil, errors.New("search needs a query")
	}
	rows, err := l.Registry.List(ctx, l.Project)
	if err != nil {
		return nil, err
	}
	var out []Match
	for _, r := range rows {
		for _, line := range spawn.MatchingLines(runner.Artifacts(r.Dir).ReadReport(), query) {
			out = append(out, Match{ID: r.ID, Line: line})
		}
	}
	return out, nil
}

// owed returns the caller's children it has not been told about, and its
// active children.
func (l *Lead) owed(ctx context.Context) (owed, active []spawn.Spawn, rows map[string]registry.Row, err error) {
	children, err := l.Registry.Children(ctx, l.Project, l.ID)
	if err != nil {
		return nil, nil, nil, err
	}
	consumed, err := l.Registry.Consumed(ctx, l.Project, l.ID)
	if err != nil {
		return nil, nil, nil, err
	}
	leased, err := l.Registry.Leased(ctx, l.Project, l.ID, procident.Alive)
	if err != nil {
		return nil, nil, nil, err
	}
	rows = make(map[string]registry.Row, len(children))
	all := make([]spawn.Spawn, len(children))
	for i, c := range children {
		rows[c.ID] = c
		all[i] = c.Spawn
	}
	return spawn.Owed(l.ID, all, consumed, leased), spawn.ActiveChildren(l.ID, all), rows, nil
}

// FindProject names the project a directory belongs to: the top of its
// git work tree (a .git directory or file), or the directory itself.
func FindProject(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if abs, err = filepath.EvalSymlinks(abs); err != nil {
		return "", fmt.Errorf("project directory: %w", err)
	}
	st, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("project directory: %w", err)
	}
	if !st.IsDir() {
		return "", fmt.Errorf("project directory %s is not a directory", abs)
	}
	for d := abs; ; {
		if _, err := os.Stat(filepath.Join(d, ".git")); err == nil {
			return d, nil
		}
		up := filepath.Dir(d)
		if up == d {
			return abs, nil
		}
		d = up
	}
}
