// Package sqlite is the embedded engine: pure-Go SQLite in the data dir,
// in WAL mode with a busy timeout so several meridian processes on one
// machine can share it, its schema brought up to date by versioned
// migrations. It is the default store, and always holds what stays local
// (spawns).
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/meridian-gw/meridian/internal/filelock"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// BusyTimeoutMS is how long a statement waits for another process's write
// lock before failing.
const BusyTimeoutMS = 5000

// Open opens (creating if needed) the database at path and migrates it.
func Open(ctx context.Context, path string) (*sql.DB, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("store dir: %w", err)
	}
	q := url.Values{}
	for _, p := range []string{
		fmt.Sprintf("busy_timeout(%d)", BusyTimeoutMS),
		"journal_mode(WAL)",
		"synchronous(NORMAL)",
		"foreign_keys(1)",
	} {
		q.Add("_pragma", p)
	}
	// Write transactions take the lock when they begin, so a read-then-write
	// transaction never fails halfway on another process's write.
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	// A new file's first connection switches it to WAL, which needs the
	// database to itself, and SQLite answers a second opener busy at once
	// instead of waiting. Openers take turns until the schema is in place.
	unlock, err := lock(path + ".lock")
	if err != nil {
		_ = db.Close()
		return nil, err
	}
	defer unlock()
	if err := checkNotEmptied(path); err != nil {
		_ = db.Close()
		return nil, err
	}
	if err := migrate(ctx, db); err != nil {
		_ = db.Close()
		if strings.Contains(err.Error(), "not a database") {
			return nil, fmt.Errorf("%s is not a SQLite database; move it aside (mv %s %s.broken) and meridian starts a new one: %w", path, path, path, err)
		}
		return nil, fmt.Errorf("migrate %s: %w", path, err)
	}
	return db, nil
}

// checkNotEmptied refuses a database file that exists but holds nothing:
// it existed, so whatever it held (conversations, spawns whose ids and
// folders would be reused) is gone, and starting over silently would
// hide that. A new database is made only where no file is.
func checkNotEmptied(path string) error {
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	if st.Size() > 0 {
		return nil
	}
	if wal, err := os.Stat(path + "-wal"); err == nil && wal.Size() > 0 {
		return nil // the data is still in the write-ahead log
	}
	return fmt.Errorf("%s exists but is empty (0 bytes): what it held is gone; move it aside (mv %s %s.empty) and meridian starts a new one", path, path, path)
}

// lock takes an exclusive advisory lock on a file, waiting for it.
func lock(path string) (func(), error) {
	unlock, err := filelock.Lock(path)
	if err != nil {
		return nil, fmt.Errorf("store lock: %w", err)
	}
	return unlock, nil
}

// migrations bring the schema from version i to i+1. Append only: a
// released migration never changes.
func migrations() []string {
	return []string{
		// 1: conversations and their turn leases.
		`CREATE TABLE conversations (
		profile          TEXT    NOT NULL,
		key              TEXT    NOT NULL,
		client           TEXT    NOT NULL,
		cli_session_id   TEXT    NOT NULL,
		digests          BLOB    NOT NULL,
		pins             TEXT    NOT NULL,
		tail             BLOB    NOT NULL,
		message_count    INTEGER NOT NULL,
		cwd              TEXT    NOT NULL,
		client_cwd       TEXT    NOT NULL,
		model            TEXT    NOT NULL,
		version          INTEGER NOT NULL,
		continuations    INTEGER NOT NULL DEFAULT 0,
		compactions      INTEGER NOT NULL DEFAULT 0,
		undos            INTEGER NOT NULL DEFAULT 0,
		divergences      INTEGER NOT NULL DEFAULT 0,
		last_input_bytes INTEGER NOT NULL DEFAULT 0,
		created_at       INTEGER NOT NULL,
		updated_at       INTEGER NOT NULL,
		PRIMARY KEY (profile, key)
	);
	CREATE INDEX conversations_updated ON conversations (updated_at);
	CREATE TABLE turn_leases (
		profile    TEXT    NOT NULL,
		key        TEXT    NOT NULL,
		owner      TEXT    NOT NULL,
		expires_at INTEGER NOT NULL,
		PRIMARY KEY (profile, key)
	);`,
		// 2: tool results already delivered to a CLI, so a repeated delivery
		// is refused rather than run upstream a second time.
		`CREATE TABLE consumed_tool_results (
		profile     TEXT    NOT NULL,
		tool_use_id TEXT    NOT NULL,
		consumed_at INTEGER NOT NULL,
		PRIMARY KEY (profile, tool_use_id)
	);
	CREATE INDEX consumed_tool_results_at ON consumed_tool_results (consumed_at);`,
		// 3: background spawns, per project: ids, rows, what each lead has
		// consumed, and the leases of running waits.
		`CREATE TABLE spawn_counters (
		project TEXT    PRIMARY KEY,
		last    INTEGER NOT NULL
	);
	CREATE TABLE spawns (
		project       TEXT    NOT NULL,
		id            TEXT    NOT NULL,
		n             INTEGER NOT NULL,
		parent_id     TEXT    NOT NULL,
		depth         INTEGER NOT NULL,
		kind          TEXT    NOT NULL,
		status        TEXT    NOT NULL,
		origin        TEXT    NOT NULL DEFAULT '',
		model         TEXT    NOT NULL,
		cwd           TEXT    NOT NULL,
		description   TEXT    NOT NULL,
		prompt        TEXT    NOT NULL,
		dir           TEXT    NOT NULL,
		runner_pid    INTEGER NOT NULL DEFAULT 0,
		runner_start  INTEGER NOT NULL DEFAULT 0,
		session_id    TEXT    NOT NULL DEFAULT '',
		exit_code     INTEGER NOT NULL DEFAULT 0,
		error         TEXT    NOT NULL DEFAULT '',
		cost_usd      REAL    NOT NULL DEFAULT 0,
		input_tokens  INTEGER NOT NULL DEFAULT 0,
		output_tokens INTEGER NOT NULL DEFAULT 0,
		duration_ms   INTEGER NOT NULL DEFAULT 0,
		created_at    INTEGER NOT NULL,
		started_at    INTEGER NOT NULL DEFAULT 0,
		finished_at   INTEGER NOT NULL DEFAULT 0,
		PRIMARY KEY (project, id)
	);
	CREATE INDEX spawns_parent ON spawns (project, parent_id);
	CREATE TABLE spawn_consumed (
		project  TEXT    NOT NULL,
		lead     TEXT    NOT NULL,
		spawn_id TEXT    NOT NULL,
		how      TEXT    NOT NULL,
		at       INTEGER NOT NULL,
		PRIMARY KEY (project, lead, spawn_id)
	);
	CREATE TABLE spawn_leases (
		project     TEXT    NOT NULL,
		lead        TEXT    NOT NULL,
		spawn_id    TEXT    NOT NULL,
		owner_pid   INTEGER NOT NULL,
		owner_start INTEGER NOT NULL,
		expires_at  INTEGER NOT NULL,
		PRIMARY KEY (project, spawn_id, owner_pid)
	);`,
		// Stored Responses API responses, scoped to a credential, and the
		// key that seals reasoning handed to clients.
		`CREATE TABLE responses (
		id          TEXT    PRIMARY KEY,
		scope       TEXT    NOT NULL,
		created_at  INTEGER NOT NULL,
		status      TEXT    NOT NULL,
		background  INTEGER NOT NULL,
		previous_id TEXT,
		owner       TEXT    NOT NULL,
		input       BLOB    NOT NULL,
		response    BLOB    NOT NULL,
		bytes       INTEGER NOT NULL
	);
	CREATE INDEX responses_created ON responses (created_at);
	CREATE TABLE seal_key (
		id  INTEGER PRIMARY KEY,
		key BLOB    NOT NULL
	);`,
		// Delivered tool results belong to their conversation: another
		// conversation may use the same tool id.
		`DROP TABLE consumed_tool_results;
	CREATE TABLE consumed_tool_results (
		profile      TEXT    NOT NULL,
		conversation TEXT    NOT NULL,
		tool_use_id  TEXT    NOT NULL,
		consumed_at  INTEGER NOT NULL,
		PRIMARY KEY (profile, conversation, tool_use_id)
	);
	CREATE INDEX consumed_tool_results_at ON consumed_tool_results (consumed_at);`,
		// Requests with an explicit id while they run, by hash only: one
		// whose meridian died mid-turn is not run blindly again.
		`CREATE TABLE unfinished_requests (
		hash       TEXT    PRIMARY KEY,
		owner      TEXT    NOT NULL,
		started_at INTEGER NOT NULL
	);`,
		// One row per request for the telemetry pages: counts, names and
		// times, never message content.
		`CREATE TABLE requests (
		id           INTEGER PRIMARY KEY AUTOINCREMENT,
		at           INTEGER NOT NULL,
		api          TEXT    NOT NULL,
		client       TEXT    NOT NULL,
		conversation TEXT    NOT NULL,
		profile      TEXT    NOT NULL,
		model        TEXT    NOT NULL,
		effective    TEXT    NOT NULL,
		verdict      TEXT    NOT NULL,
		live         INTEGER NOT NULL,
		replay       INTEGER NOT NULL,
		stream       INTEGER NOT NULL,
		queue_ns     INTEGER NOT NULL,
		ttft_ns      INTEGER NOT NULL,
		total_ns     INTEGER NOT NULL,
		input        INTEGER NOT NULL,
		output       INTEGER NOT NULL,
		cache_read   INTEGER NOT NULL,
		cache_write  INTEGER NOT NULL,
		cost         REAL    NOT NULL,
		status       INTEGER NOT NULL,
		error_type   TEXT    NOT NULL
	);
	CREATE INDEX requests_at ON requests (at);`,
		// Which profile served a conversation last, by its key alone.
		`CREATE INDEX conversations_key ON conversations (key, updated_at);`,
		// Whether a conversation's tail is a user message of tool results
		// the CLI holds (a turn cut after its results were taken).
		`ALTER TABLE conversations ADD COLUMN tail_slot INTEGER NOT NULL DEFAULT 0;`,
		// Ownership names a host and a process incarnation, and a turn
		// lease a token that fences its publishes; saved answers, event
		// logs, profile benches and heartbeats are shared through the
		// store. Leases and journal entries only live while their
		// requests run, so they start over.
		`DROP TABLE turn_leases;
	CREATE TABLE turn_leases (
		profile     TEXT    NOT NULL,
		key         TEXT    NOT NULL,
		token       TEXT    NOT NULL,
		host        TEXT    NOT NULL,
		incarnation TEXT    NOT NULL,
		expires_at  INTEGER NOT NULL,
		PRIMARY KEY (profile, key)
	);
	DROP TABLE unfinished_requests;
	CREATE TABLE unfinished_requests (
		hash        TEXT    PRIMARY KEY,
		host        TEXT    NOT NULL,
		incarnation TEXT    NOT NULL,
		started_at  INTEGER NOT NULL
	);
	ALTER TABLE responses ADD COLUMN host TEXT NOT NULL DEFAULT '';
	ALTER TABLE responses ADD COLUMN incarnation TEXT NOT NULL DEFAULT '';
	ALTER TABLE responses ADD COLUMN cancel INTEGER NOT NULL DEFAULT 0;
	UPDATE responses SET incarnation = owner;
	ALTER TABLE responses DROP COLUMN owner;
	CREATE TABLE response_logs (
		id    TEXT    PRIMARY KEY,
		kept  INTEGER NOT NULL,
		bytes INTEGER NOT NULL,
		ended INTEGER NOT NULL
	);
	CREATE TABLE response_events (
		id    TEXT    NOT NULL,
		seq   INTEGER NOT NULL,
		frame BLOB    NOT NULL,
		PRIMARY KEY (id, seq)
	);
	CREATE TABLE saved_answers (
		seq        INTEGER PRIMARY KEY AUTOINCREMENT,
		scope      TEXT    NOT NULL,
		key        TEXT    NOT NULL,
		status     INTEGER NOT NULL,
		header     BLOB    NOT NULL,
		body       BLOB    NOT NULL,
		bytes      INTEGER NOT NULL,
		saved_at   INTEGER NOT NULL,
		expires_at INTEGER NOT NULL,
		UNIQUE (scope, key)
	);
	CREATE INDEX saved_answers_expires ON saved_answers (expires_at);
	CREATE TABLE saved_answer_calls (
		scope   TEXT NOT NULL,
		call_id TEXT NOT NULL,
		key     TEXT NOT NULL,
		PRIMARY KEY (scope, call_id, key)
	);
	CREATE INDEX saved_answer_calls_key ON saved_answer_calls (scope, key);
	CREATE TABLE profile_bench (
		profile TEXT    PRIMARY KEY,
		until   INTEGER NOT NULL
	);
	CREATE TABLE hosts (
		host        TEXT    NOT NULL,
		incarnation TEXT    NOT NULL,
		addr        TEXT    NOT NULL,
		version     TEXT    NOT NULL,
		started_at  INTEGER NOT NULL,
		expires_at  INTEGER NOT NULL,
		PRIMARY KEY (host, incarnation)
	);
	ALTER TABLE requests ADD COLUMN host TEXT NOT NULL DEFAULT '';`,
		// 11: what a host's heartbeat says of it, which process holds a
		// conversation, and the transcript another host resumes it from.
		`ALTER TABLE hosts ADD COLUMN state TEXT NOT NULL DEFAULT 'serving';
	ALTER TABLE hosts ADD COLUMN live INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE hosts ADD COLUMN running INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE conversations ADD COLUMN holder_host TEXT NOT NULL DEFAULT '';
	ALTER TABLE conversations ADD COLUMN holder_incarnation TEXT NOT NULL DEFAULT '';
	ALTER TABLE conversations ADD COLUMN transcript_session TEXT NOT NULL DEFAULT '';
	ALTER TABLE conversations ADD COLUMN transcript BLOB;`,
		// 12: the start-time options new conversations used, for the
		// spare a restart starts.
		`CREATE TABLE start_contracts (
		profile  TEXT    NOT NULL,
		contract TEXT    NOT NULL,
		options  BLOB    NOT NULL,
		uses     INTEGER NOT NULL,
		last_at  INTEGER NOT NULL,
		PRIMARY KEY (profile, contract)
	);`,
		// 13: API keys for people and tools (digests only), and what
		// their limits count (admissions, running requests, daily tokens), and
		// the key each request record came with.
		`CREATE TABLE api_keys (
		name           TEXT    PRIMARY KEY,
		digest         TEXT    NOT NULL UNIQUE,
		profiles       TEXT    NOT NULL,
		models         TEXT    NOT NULL,
		rpm            INTEGER NOT NULL,
		concurrent     INTEGER NOT NULL,
		tokens_per_day INTEGER NOT NULL,
		expires_at     INTEGER NOT NULL,
		created_at     INTEGER NOT NULL,
		revoked_at     INTEGER NOT NULL DEFAULT 0,
		rotated_at     INTEGER NOT NULL DEFAULT 0
	);
	CREATE TABLE key_hits (
		name TEXT    NOT NULL,
		at   INTEGER NOT NULL
	);
	CREATE INDEX key_hits_name_at ON key_hits (name, at);
	CREATE TABLE key_running (
		name     TEXT    NOT NULL,
		id       TEXT    NOT NULL,
		host     TEXT    NOT NULL,
		until_at INTEGER NOT NULL,
		PRIMARY KEY (name, id)
	);
	CREATE TABLE key_tokens (
		name   TEXT    NOT NULL,
		day    INTEGER NOT NULL,
		tokens INTEGER NOT NULL,
		PRIMARY KEY (name, day)
	);
	ALTER TABLE requests ADD COLUMN key_name TEXT NOT NULL DEFAULT '';
	CREATE INDEX requests_key_at ON requests (key_name, at);`,
		// 14: the error text a request was answered with, for the
		// dashboard's request list.
		`ALTER TABLE requests ADD COLUMN error_message TEXT NOT NULL DEFAULT '';`,
		// 15: why the request's profile was chosen.
		`ALTER TABLE requests ADD COLUMN route TEXT NOT NULL DEFAULT '';`,
		// 16: the profiles' plan windows, shared by the hosts.
		`CREATE TABLE profile_figures (
		profile     TEXT    PRIMARY KEY,
		observed_at INTEGER NOT NULL,
		windows     TEXT    NOT NULL
	);`,
		// 17: alert sinks, and the alerts sent (one per crossing).
		`CREATE TABLE alert_sinks (
		name       TEXT   PRIMARY KEY,
		url        TEXT   NOT NULL,
		format     TEXT   NOT NULL,
		secret     TEXT   NOT NULL,
		created_at BIGINT NOT NULL
	);
	CREATE TABLE alerts_sent (
		key     TEXT   PRIMARY KEY,
		at      BIGINT NOT NULL,
		kind    TEXT   NOT NULL,
		profile TEXT   NOT NULL,
		message TEXT   NOT NULL,
		host    TEXT   NOT NULL
	);
	CREATE INDEX alerts_sent_at ON alerts_sent (at);`,
		// 18: a key's default model, dollar budget with what it spent
		// each day, and capture mode; the model aliases; the captures of
		// the request inspector.
		`ALTER TABLE api_keys ADD COLUMN default_model TEXT NOT NULL DEFAULT '';
	ALTER TABLE api_keys ADD COLUMN budget_micros BIGINT NOT NULL DEFAULT 0;
	ALTER TABLE api_keys ADD COLUMN budget_alert_micros BIGINT NOT NULL DEFAULT 0;
	ALTER TABLE api_keys ADD COLUMN budget_per TEXT NOT NULL DEFAULT '';
	ALTER TABLE api_keys ADD COLUMN capture TEXT NOT NULL DEFAULT '';
	ALTER TABLE key_tokens ADD COLUMN micros BIGINT NOT NULL DEFAULT 0;
	CREATE TABLE model_aliases (
		name       TEXT   PRIMARY KEY,
		model      TEXT   NOT NULL,
		effort     TEXT   NOT NULL,
		created_at BIGINT NOT NULL
	);
	CREATE TABLE captures (
		id       INTEGER PRIMARY KEY AUTOINCREMENT,
		at       BIGINT NOT NULL,
		host     TEXT   NOT NULL,
		key_name TEXT   NOT NULL,
		api      TEXT   NOT NULL,
		model    TEXT   NOT NULL,
		status   INTEGER NOT NULL,
		meta     BLOB  NOT NULL,
		request  BLOB  NOT NULL,
		written  BLOB  NOT NULL,
		answer   BLOB  NOT NULL,
		size     BIGINT NOT NULL
	);
	CREATE INDEX captures_at ON captures (at);`,
	}
}

// migrate applies the migrations the database lacks, each in its own
// transaction with the schema version (PRAGMA user_version) it reaches.
func migrate(ctx context.Context, db *sql.DB) error {
	migrations := migrations()
	for {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		var v int
		if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
			_ = tx.Rollback()
			return err
		}
		if v > len(migrations) {
			_ = tx.Rollback()
			return fmt.Errorf("database schema version %d is newer than this meridian knows (%d)", v, len(migrations))
		}
		if v == len(migrations) {
			return tx.Rollback()
		}
		if _, err := tx.ExecContext(ctx, migrations[v]); err != nil {
			_ = tx.Rollback()
			return fmt.Errorf("migration %d: %w", v+1, err)
		}
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", v+1)); err != nil {
			_ = tx.Rollback()
			return err
		}
		if err := tx.Commit(); err != nil {
			return err
		}
	}
}
