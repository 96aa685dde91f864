package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// migrations bring the schema from version i to i+1. Append only: a
// released migration never changes. The tables are those of the SQLite
// engine, in PostgreSQL's types; spawns are not among them (they stay in
// each host's local SQLite file).
func migrations() []string {
	return []string{
		// 1: every shared record.
		`CREATE TABLE conversations (
		profile          TEXT    NOT NULL,
		key              TEXT    NOT NULL,
		client           TEXT    NOT NULL,
		cli_session_id   TEXT    NOT NULL,
		digests          BYTEA   NOT NULL,
		pins             TEXT    NOT NULL,
		tail             BYTEA   NOT NULL,
		tail_slot        BOOLEAN NOT NULL DEFAULT FALSE,
		message_count    INTEGER NOT NULL,
		cwd              TEXT    NOT NULL,
		client_cwd       TEXT    NOT NULL,
		model            TEXT    NOT NULL,
		version          BIGINT  NOT NULL,
		continuations    INTEGER NOT NULL DEFAULT 0,
		compactions      INTEGER NOT NULL DEFAULT 0,
		undos            INTEGER NOT NULL DEFAULT 0,
		divergences      INTEGER NOT NULL DEFAULT 0,
		last_input_bytes BIGINT  NOT NULL DEFAULT 0,
		created_at       BIGINT  NOT NULL,
		updated_at       BIGINT  NOT NULL,
		PRIMARY KEY (profile, key)
	);
	CREATE INDEX conversations_updated ON conversations (updated_at);
	CREATE INDEX conversations_key ON conversations (key, updated_at);
	CREATE TABLE turn_leases (
		profile     TEXT   NOT NULL,
		key         TEXT   NOT NULL,
		token       TEXT   NOT NULL,
		host        TEXT   NOT NULL,
		incarnation TEXT   NOT NULL,
		expires_at  BIGINT NOT NULL,
		PRIMARY KEY (profile, key)
	);
	CREATE TABLE consumed_tool_results (
		profile      TEXT   NOT NULL,
		conversation TEXT   NOT NULL,
		tool_use_id  TEXT   NOT NULL,
		consumed_at  BIGINT NOT NULL,
		PRIMARY KEY (profile, conversation, tool_use_id)
	);
	CREATE INDEX consumed_tool_results_at ON consumed_tool_results (consumed_at);
	CREATE TABLE unfinished_requests (
		hash        TEXT   PRIMARY KEY,
		host        TEXT   NOT NULL,
		incarnation TEXT   NOT NULL,
		started_at  BIGINT NOT NULL
	);
	CREATE TABLE responses (
		seq         BIGINT  GENERATED ALWAYS AS IDENTITY,
		id          TEXT    PRIMARY KEY,
		scope       TEXT    NOT NULL,
		created_at  BIGINT  NOT NULL,
		status      TEXT    NOT NULL,
		background  BOOLEAN NOT NULL,
		previous_id TEXT,
		host        TEXT    NOT NULL,
		incarnation TEXT    NOT NULL,
		cancel      BOOLEAN NOT NULL DEFAULT FALSE,
		input       BYTEA   NOT NULL,
		response    BYTEA   NOT NULL,
		bytes       BIGINT  NOT NULL
	);
	CREATE INDEX responses_created ON responses (created_at, seq);
	CREATE TABLE seal_key (
		id  INTEGER PRIMARY KEY,
		key BYTEA   NOT NULL
	);
	CREATE TABLE response_logs (
		id    TEXT    PRIMARY KEY,
		kept  INTEGER NOT NULL,
		bytes BIGINT  NOT NULL,
		ended BOOLEAN NOT NULL
	);
	CREATE TABLE response_events (
		id    TEXT    NOT NULL,
		seq   INTEGER NOT NULL,
		frame BYTEA   NOT NULL,
		PRIMARY KEY (id, seq)
	);
	CREATE TABLE saved_answers (
		seq        BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
		scope      TEXT    NOT NULL,
		key        TEXT    NOT NULL,
		status     INTEGER NOT NULL,
		header     BYTEA   NOT NULL,
		body       BYTEA   NOT NULL,
		bytes      BIGINT  NOT NULL,
		saved_at   BIGINT  NOT NULL,
		expires_at BIGINT  NOT NULL,
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
	CREATE TABLE requests (
		id          BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
		host        TEXT    NOT NULL,
		at          BIGINT  NOT NULL,
		api         TEXT    NOT NULL,
		client      TEXT    NOT NULL,
		conversation TEXT   NOT NULL,
		profile     TEXT    NOT NULL,
		model       TEXT    NOT NULL,
		effective   TEXT    NOT NULL,
		verdict     TEXT    NOT NULL,
		live        BOOLEAN NOT NULL,
		replay      BOOLEAN NOT NULL,
		stream      BOOLEAN NOT NULL,
		queue_ns    BIGINT  NOT NULL,
		ttft_ns     BIGINT  NOT NULL,
		total_ns    BIGINT  NOT NULL,
		input       BIGINT  NOT NULL,
		output      BIGINT  NOT NULL,
		cache_read  BIGINT  NOT NULL,
		cache_write BIGINT  NOT NULL,
		cost        DOUBLE PRECISION NOT NULL,
		status      INTEGER NOT NULL,
		error_type  TEXT    NOT NULL
	);
	CREATE INDEX requests_at ON requests (at);
	CREATE TABLE profile_bench (
		profile TEXT   PRIMARY KEY,
		until   BIGINT NOT NULL
	);
	CREATE TABLE hosts (
		host        TEXT   NOT NULL,
		incarnation TEXT   NOT NULL,
		addr        TEXT   NOT NULL,
		version     TEXT   NOT NULL,
		started_at  BIGINT NOT NULL,
		expires_at  BIGINT NOT NULL,
		PRIMARY KEY (host, incarnation)
	);`,
		// 2: what a host's heartbeat says of it, which process holds a
		// conversation, and the transcript another host resumes it from.
		`ALTER TABLE hosts ADD COLUMN state TEXT NOT NULL DEFAULT 'serving',
		ADD COLUMN live INTEGER NOT NULL DEFAULT 0,
		ADD COLUMN running INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE conversations ADD COLUMN holder_host TEXT NOT NULL DEFAULT '',
		ADD COLUMN holder_incarnation TEXT NOT NULL DEFAULT '',
		ADD COLUMN transcript_session TEXT NOT NULL DEFAULT '',
		ADD COLUMN transcript BYTEA;`,
		// 3: the start-time options new conversations used, for the spare
		// a restart starts.
		`CREATE TABLE start_contracts (
		profile  TEXT   NOT NULL,
		contract TEXT   NOT NULL,
		options  BYTEA  NOT NULL,
		uses     BIGINT NOT NULL,
		last_at  BIGINT NOT NULL,
		PRIMARY KEY (profile, contract)
	);`,
		// 4: API keys for people and tools (digests only), and what
		// their limits count (admissions, running requests, daily tokens), and
		// the key each request record came with.
		`CREATE TABLE api_keys (
		name           TEXT    PRIMARY KEY,
		digest         TEXT    NOT NULL UNIQUE,
		profiles       TEXT    NOT NULL,
		models         TEXT    NOT NULL,
		rpm            INTEGER NOT NULL,
		concurrent     INTEGER NOT NULL,
		tokens_per_day BIGINT  NOT NULL,
		expires_at     BIGINT  NOT NULL,
		created_at     BIGINT  NOT NULL,
		revoked_at     BIGINT  NOT NULL DEFAULT 0,
		rotated_at     BIGINT  NOT NULL DEFAULT 0
	);
	CREATE TABLE key_hits (
		name TEXT    NOT NULL,
		at   BIGINT  NOT NULL
	);
	CREATE INDEX key_hits_name_at ON key_hits (name, at);
	CREATE TABLE key_running (
		name     TEXT    NOT NULL,
		id       TEXT    NOT NULL,
		host     TEXT    NOT NULL,
		until_at BIGINT  NOT NULL,
		PRIMARY KEY (name, id)
	);
	CREATE TABLE key_tokens (
		name   TEXT    NOT NULL,
		day    BIGINT  NOT NULL,
		tokens BIGINT  NOT NULL,
		PRIMARY KEY (name, day)
	);
	ALTER TABLE requests ADD COLUMN key_name TEXT NOT NULL DEFAULT '';
	CREATE INDEX requests_key_at ON requests (key_name, at);`,
		// 5: the error text a request was answered with, for the
		// dashboard's request list.
		`ALTER TABLE requests ADD COLUMN error_message TEXT NOT NULL DEFAULT '';`,
		// 6: why the request's profile was chosen.
		`ALTER TABLE requests ADD COLUMN route TEXT NOT NULL DEFAULT '';`,
		// 7: the profiles' plan windows, shared by the hosts.
		`CREATE TABLE profile_figures (
		profile     TEXT   PRIMARY KEY,
		observed_at BIGINT NOT NULL,
		windows     TEXT   NOT NULL
	);`,
		// 8: alert sinks, and the alerts sent (one per crossing).
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
		// 9: a key's default model, dollar budget with what it spent
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
		id       BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
		at       BIGINT NOT NULL,
		host     TEXT   NOT NULL,
		key_name TEXT   NOT NULL,
		api      TEXT   NOT NULL,
		model    TEXT   NOT NULL,
		status   INTEGER NOT NULL,
		meta     BYTEA  NOT NULL,
		request  BYTEA  NOT NULL,
		written  BYTEA  NOT NULL,
		answer   BYTEA  NOT NULL,
		size     BIGINT NOT NULL
	);
	CREATE INDEX captures_at ON captures (at);`,
	}
}

// migrationLock is the advisory lock the hosts starting at once take
// turns on: one migrates, the others find the schema in place.
const migrationLock int64 = 0x6d65726964000000

// migrate applies the migrations the database lacks under the migration
// lock, each in its own transaction with the version it reaches. A
// schema newer than this binary knows is refused.
func migrate(ctx context.Context, conn *pgx.Conn) error {
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, migrationLock); err != nil {
		return fmt.Errorf("take the migration lock: %w", err)
	}
	defer func() { _, _ = conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, migrationLock) }()
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS meridian_schema (version INTEGER NOT NULL)`); err != nil {
		return fmt.Errorf("schema version table: %w", err)
	}
	ms := migrations()
	for {
		var v int
		err := conn.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM meridian_schema`).Scan(&v)
		if err != nil {
			return fmt.Errorf("read the schema version: %w", err)
		}
		if v > len(ms) {
			return fmt.Errorf("the database's schema is version %d, newer than this meridian knows (%d): run the newer meridian, or point this one at another database", v, len(ms))
		}
		if v == len(ms) {
			return nil
		}
		err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, ms[v]); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO meridian_schema (version) VALUES ($1)`, v+1)
			return err
		})
		if err != nil {
			return fmt.Errorf("migration %d: %w", v+1, err)
		}
	}
}
