// Package registry records spawns in SQLite, per project: ids allocated
// atomically, status changes checked against the spawn core's rules, what
// each lead has consumed, and the leases of running waits. Several
// meridian processes (a worker per spawn, the lead's commands) share it.
package registry

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/meridian-gw/meridian/internal/spawn"
)

// ErrNotFound reports an unknown spawn id.
var ErrNotFound = errors.New("no such spawn")

// Row is a spawn as recorded.
type Row struct {
	spawn.Spawn
	Project     string
	Depth       int
	Kind        string // child or primary
	Prompt      string
	Dir         string // artifacts folder
	RunnerPID   int
	RunnerStart uint64
	SessionID   string
	Started     time.Time
}

// Registry is the spawn store.
type Registry struct {
	db  *sql.DB
	now func() time.Time
}

// New uses an opened database (see package store).
func New(db *sql.DB) *Registry { return &Registry{db: db, now: time.Now} }

// New spawn kinds.
const (
	KindChild   = "child"
	KindPrimary = "primary"
)

// Create records a spawn under the project's next id. dir maps the id to
// the spawn's artifacts folder. A spawn created running (a primary) is
// recorded with its runner in the same write.
func (r *Registry) Create(ctx context.Context, row Row, dir func(id string) string) (Row, error) {
	tx, err := r.db.BeginTx(ctx, nil)
	if err != nil {
		return row, err
	}
	defer tx.Rollback()
	var n int
	err = tx.QueryRowContext(ctx, `INSERT INTO spawn_counters (project, last) VALUES (?, 1)
		ON CONFLICT (project) DO UPDATE SET last = last + 1 RETURNING last`, row.Project).Scan(&n)
	if err != nil {
		return row, fmt.Errorf("allocate spawn id: %w", err)
	}
	row.N, row.ID = n, fmt.Sprintf("p%d", n)
	row.Dir = dir(row.ID)
	row.Created = r.now()
	if row.Status == "" {
		row.Status = spawn.Queued
	}
	if row.Kind == "" {
		row.Kind = KindChild
	}
	var started int64
	if row.Status == spawn.Running {
		row.Started = row.Created
		started = row.Started.UnixMilli()
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO spawns (project, id, n, parent_id, depth, kind, status, model, cwd,
		description, prompt, dir, runner_pid, runner_start, created_at, started_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		row.Project, row.ID, row.N, row.ParentID, row.Depth, row.Kind, string(row.Status), row.Model, row.Cwd,
		row.Desc, row.Prompt, row.Dir, row.RunnerPID, row.RunnerStart, row.Created.UnixMilli(), started)
	if err != nil {
		return row, fmt.Errorf("record spawn: %w", err)
	}
	return row, tx.Commit()
}

const rowColumns = `project, id, n, parent_id, depth, kind, status, origin, model, cwd, description, prompt, dir,
	runner_pid, runner_start, session_id, exit_code, error, cost_usd, input_tokens, output_tokens, duration_ms,
	created_at, started_at, finished_at`

func scanRow(s interface{ Scan(...any) error }) (Row, error) {
	var row Row
	var status, origin string
	var durMS, created, started, finished int64
	err := s.Scan(&row.Project, &row.ID, &row.N, &row.ParentID, &row.Depth, &row.Kind, &status, &origin, &row.Model,
		&row.Cwd, &row.Desc, &row.Prompt, &row.Dir, &row.RunnerPID, &row.RunnerStart, &row.SessionID, &row.ExitCode,
		&row.Error, &row.CostUSD, &row.InTok, &row.OutTok, &durMS, &created, &started, &finished)
	row.Status, row.Origin = spawn.Status(status), spawn.Origin(origin)
	row.Duration = time.Duration(durMS) * time.Millisecond
	row.Created = time.UnixMilli(created)
	if started > 0 {
		row.Started = time.UnixMilli(started)
	}
	if finished > 0 {
		row.Finished = time.UnixMilli(finished)
	}
	return row, err
}

// Get returns one spawn.
func (r *Registry) Get(ctx context.Context, project, id string) (Row, error) {
	row, err := scanRow(r.db.QueryRowContext(ctx, `SELECT `+rowColumns+` FROM spawns WHERE project = ? AND id = ?`, project, id))
	if errors.Is(err, sql.ErrNoRows) {
		return row, fmt.Errorf("%w %s in this project", ErrNotFound, id)
	}
	return row, err
}

// List returns the project's spawns, oldest first.
func (r *Registry) List(ctx context.Context, project string) ([]Row, error) {
	return r.query(ctx, `SELECT `+rowColumns+` FROM spawns WHERE project = ? ORDER BY n`, project)
}

// CountByStatus counts the spawns of every project by status.
func (r *Registry) CountByStatus(ctx context.Context) (map[string]int, error) {
	rows, err := r.db.QueryContext(ctx, `SELECT status, COUNT(*) FROM spawns GROUP BY status`)
	if err != nil {
		return nil, fmt.Errorf("spawn registry: %w", err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var status string
		var n int
		if err := rows.Scan(&status, &n); err != nil {
			return nil, fmt.Errorf("spawn registry: %w", err)
		}
		out[status] = n
	}
	return out, rows.Err()
}

// Children returns a lead's direct children, oldest first. A primary (a
// session meridian claude started) is nobody's child: no lead is told
// when it ends.
func (r *Registry) Children(ctx context.Context, project, lead string) ([]Row, error) {
	return r.query(ctx, `SELECT `+rowColumns+` FROM spawns WHERE project = ? AND parent_id = ? AND kind = 'child' ORDER BY n`, project, lead)
}

// Active returns the project's active spawns.
func (r *Registry) Active(ctx context.Context, project string) ([]Row, error) {
	return r.query(ctx, `SELECT `+rowColumns+` FROM spawns WHERE project = ? AND status IN ('queued', 'running', 'finalizing') ORDER BY n`, project)
}

func (r *Registry) query(ctx context.Context, q string, args ...any) ([]Row, error) {
	rows, err := r.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read spawns: %w", err)
	}
	defer rows.Close()
	var out []Row
	for rows.Next() {
		row, err := scanRow(rows)
		if err != nil {
			return nil, fmt.Errorf("read spawns: %w", err)
		}
		out = append(out, row)
	}
	return out, rows.Err()
}

// Start moves a spawn to running, recording its runner process.
func (r *Registry) Start(ctx context.Context, project, id string, pid int, start uint64) error {
	return r.transition(ctx, project, id, spawn.Running, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE spawns SET runner_pid = ?, runner_start = ?, started_at = ? WHERE project = ? AND id = ?`,
			pid, start, r.now().UnixMilli(), project, id)
		return err
	})
}

// SetRunner records a spawn's runner process without changing its status.
func (r *Registry) SetRunner(ctx context.Context, project, id string, pid int, start uint64) error {
	_, err := r.db.ExecContext(ctx, `UPDATE spawns SET runner_pid = ?, runner_start = ? WHERE project = ? AND id = ?`, pid, start, project, id)
	return err
}

// SetSession records the CLI session a spawn runs in.
func (r *Registry) SetSession(ctx context.Context, project, id, sessionID string) error {
	_, err := r.db.ExecContext(ctx, `UPDATE spawns SET session_id = ? WHERE project = ? AND id = ?`, sessionID, project, id)
	return err
}

// Finalizing moves a running spawn to finalizing.
func (r *Registry) Finalizing(ctx context.Context, project, id string) error {
	return r.transition(ctx, project, id, spawn.Finalizing, nil)
}

// notFound names a missing spawn as such; any other read error is
// reported as what it is, never as an unknown id.
func notFound(err error, id string) error {
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%w %s", ErrNotFound, id)
	}
	return fmt.Errorf("read spawn %s: %w", id, err)
}

// ErrTransition reports a status change the rules refuse.
var ErrTransition = errors.New("status change refused")

func (r *Registry) transition(ctx context.Context, project, id string, to spawn.Status, also func(*sql.Tx) error) error {
	tx, err := r.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var from string
	if err := tx.QueryRowContext(ctx, `SELECT status FROM spawns WHERE project = ? AND id = ?`, project, id).Scan(&from); err != nil {
		return notFound(err, id)
	}
	if !spawn.CanTransition(spawn.Status(from), to) {
		return fmt.Errorf("%w: %s is %s and cannot become %s", ErrTransition, id, from, to)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE spawns SET status = ? WHERE project = ? AND id = ?`, string(to), project, id); err != nil {
		return err
	}
	if also != nil {
		if err := also(tx); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// Final is a terminal write.
type Final struct {
	Status    spawn.Status
	Origin    spawn.Origin
	ExitCode  int
	Error     string
	CostUSD   float64
	InTok     int
	OutTok    int
	Duration  time.Duration
	SessionID string
	// Model is the model that ran, when the writer knows it; it replaces
	// the one asked for (an alias, or none for the CLI's default).
	Model string
}

// Finalize writes a terminal status if the rules let this writer: the
// first authoritative writer wins and the reconciler loses to any of
// them. Cost, tokens and duration are kept from every finalize. It reports
// whether the status was written.
func (r *Registry) Finalize(ctx context.Context, project, id string, f Final) (bool, error) {
	if !f.Status.Terminal() {
		return false, fmt.Errorf("%w: %s is not a terminal status", ErrTransition, f.Status)
	}
	tx, err := r.db.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	var from, origin string
	err = tx.QueryRowContext(ctx, `SELECT status, origin FROM spawns WHERE project = ? AND id = ?`, project, id).Scan(&from, &origin)
	if err != nil {
		return false, notFound(err, id)
	}
	cur := spawn.Status(from)
	wins := spawn.TerminalWins(cur, spawn.Origin(origin), f.Origin) && (cur.Terminal() || spawn.CanTransition(cur, f.Status))
	// Metrics merge whatever the status outcome.
	_, err = tx.ExecContext(ctx, `UPDATE spawns SET cost_usd = max(cost_usd, ?), input_tokens = max(input_tokens, ?),
		output_tokens = max(output_tokens, ?), duration_ms = max(duration_ms, ?),
		session_id = CASE WHEN session_id = '' THEN ? ELSE session_id END,
		model = CASE WHEN ? != '' THEN ? ELSE model END WHERE project = ? AND id = ?`,
		f.CostUSD, f.InTok, f.OutTok, f.Duration.Milliseconds(), f.SessionID, f.Model, f.Model, project, id)
	if err != nil {
		return false, err
	}
	if wins {
		_, err = tx.ExecContext(ctx, `UPDATE spawns SET status = ?, origin = ?, exit_code = ?, error = ?, finished_at = ?
			WHERE project = ? AND id = ?`, string(f.Status), string(f.Origin), f.ExitCode, f.Error, r.now().UnixMilli(), project, id)
		if err != nil {
			return false, err
		}
	}
	return wins, tx.Commit()
}

// Consume records that a lead has seen spawns' results, all of them or
// none. It is a set union: consuming twice changes nothing, and the first
// way a result was consumed is the one kept.
func (r *Registry) Consume(ctx context.Context, project, lead, how string, ids ...string) error {
	tx, err := r.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("record consumption: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	at := r.now().UnixMilli()
	for _, id := range ids {
		if _, err := tx.ExecContext(ctx, `INSERT INTO spawn_consumed (project, lead, spawn_id, how, at) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT DO NOTHING`, project, lead, id, how, at); err != nil {
			return fmt.Errorf("record consumption: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("record consumption: %w", err)
	}
	return nil
}

// ConsumedHow returns how each of a lead's consumed spawns was consumed
// (ack, clear, receipt, show, status, wait, cancel).
func (r *Registry) ConsumedHow(ctx context.Context, project, lead string) (map[string]string, error) {
	rows, err := r.db.QueryContext(ctx, `SELECT spawn_id, how FROM spawn_consumed WHERE project = ? AND lead = ?`, project, lead)
	if err != nil {
		return nil, fmt.Errorf("read consumption: %w", err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var id, how string
		if err := rows.Scan(&id, &how); err != nil {
			return nil, fmt.Errorf("read consumption: %w", err)
		}
		out[id] = how
	}
	return out, rows.Err()
}

// Consumed returns the spawns a lead has consumed.
func (r *Registry) Consumed(ctx context.Context, project, lead string) (map[string]bool, error) {
	how, err := r.ConsumedHow(ctx, project, lead)
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(how))
	for id := range how {
		out[id] = true
	}
	return out, nil
}

// Lease marks spawns as being waited for by a running wait (its process
// and start time), until expires.
func (r *Registry) Lease(ctx context.Context, project, lead string, ownerPID int, ownerStart uint64, expires time.Time, ids ...string) error {
	for _, id := range ids {
		_, err := r.db.ExecContext(ctx, `INSERT INTO spawn_leases (project, lead, spawn_id, owner_pid, owner_start, expires_at)
			VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (project, spawn_id, owner_pid) DO UPDATE SET expires_at = excluded.expires_at,
			owner_start = excluded.owner_start`, project, lead, id, ownerPID, ownerStart, expires.UnixMilli())
		if err != nil {
			return fmt.Errorf("lease spawns: %w", err)
		}
	}
	return nil
}

// Unlease drops a wait's leases.
func (r *Registry) Unlease(ctx context.Context, project string, ownerPID int) error {
	_, err := r.db.ExecContext(ctx, `DELETE FROM spawn_leases WHERE project = ? AND owner_pid = ?`, project, ownerPID)
	return err
}

// Leased returns the spawns under an unexpired lease whose owner is still
// running (alive decides, from pid and start time).
func (r *Registry) Leased(ctx context.Context, project, lead string, alive func(pid int, start uint64) bool) (map[string]bool, error) {
	rows, err := r.db.QueryContext(ctx, `SELECT spawn_id, owner_pid, owner_start FROM spawn_leases
		WHERE project = ? AND lead = ? AND expires_at > ?`, project, lead, r.now().UnixMilli())
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var id string
		var pid int
		var start uint64
		if err := rows.Scan(&id, &pid, &start); err != nil {
			return nil, err
		}
		if alive(pid, start) {
			out[id] = true
		}
	}
	return out, rows.Err()
}
