// Package responses keeps Responses API responses: stored responses in
// SQLite, bounded by one oldest-first ledger of count and bytes and scoped
// to the credential that created them; the background runs that answer
// them detached from any request; and each background response's bounded
// event log, which a client can replay from any point and follow live.
package responses

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/meridian-gw/meridian/internal/spawn/proc"
)

// Defaults for the ledger.
const (
	DefaultMaxCount = 1000
	DefaultMaxBytes = 256 << 20
)

// ErrNotFound is a response that does not exist for the asking scope:
// another credential's responses are not found either.
var ErrNotFound = errors.New("responses: no such response")

// ErrFull is returned when the ledger cannot make room without evicting
// responses that are still running.
var ErrFull = errors.New("responses: the store is full of running responses")

// Record is a stored response.
type Record struct {
	ID         string
	Scope      string
	CreatedAt  time.Time
	Status     string
	Background bool
	Previous   string
	// Input is the request's input items, resolved, as a JSON array;
	// Response the response object.
	Input    json.RawMessage
	Response json.RawMessage
}

// Scope names who may see the responses a request creates: the digest of
// the API key it presented, or the local user when it presented none.
func Scope(key string) string {
	if key == "" {
		return "local"
	}
	sum := sha256.Sum256([]byte(key))
	return "key:" + hex.EncodeToString(sum[:16])
}

// Store keeps responses.
type Store struct {
	db       *sql.DB
	maxCount int
	maxBytes int64
	owner    string // this process, as pid:start time
	now      func() time.Time
}

// Config bounds a store.
type Config struct {
	MaxCount int
	MaxBytes int64
	Now      func() time.Time
}

// Open uses an opened database (see package store). It enforces the
// ledger's bounds once, so lowered limits apply at start, and marks failed
// the unfinished responses whose process is gone: a restart never leaves a
// response in progress forever.
func Open(ctx context.Context, db *sql.DB, cfg Config) (*Store, error) {
	if cfg.MaxCount <= 0 {
		cfg.MaxCount = DefaultMaxCount
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Store{db: db, maxCount: cfg.MaxCount, maxBytes: cfg.MaxBytes, owner: proc.Owner(), now: cfg.Now}
	if err := s.failOrphans(ctx); err != nil {
		return nil, err
	}
	if err := s.tx(ctx, func(tx *sql.Tx) error { return s.enforce(ctx, tx, 0, "") }); err != nil {
		return nil, err
	}
	return s, nil
}

// unfinished are the statuses of a response still being answered.
const unfinished = `('queued', 'in_progress')`

// failOrphans marks failed every unfinished response whose owner process
// is gone.
func (s *Store) failOrphans(ctx context.Context) error {
	rows, err := s.db.QueryContext(ctx, `SELECT id, owner, response FROM responses WHERE status IN `+unfinished)
	if err != nil {
		return fmt.Errorf("stored responses: %w", err)
	}
	type orphan struct {
		id   string
		resp json.RawMessage
	}
	var orphans []orphan
	for rows.Next() {
		var o orphan
		var owner string
		if err := rows.Scan(&o.id, &owner, &o.resp); err != nil {
			rows.Close()
			return fmt.Errorf("stored responses: %w", err)
		}
		if !proc.OwnerAlive(owner) {
			orphans = append(orphans, o)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("stored responses: %w", err)
	}
	for _, o := range orphans {
		resp := failedObject(o.resp, "server_error", "meridian stopped before this response finished; send the request again")
		if _, err := s.db.ExecContext(ctx, `UPDATE responses SET status = 'failed', response = ?, bytes = length(input) + ? WHERE id = ? AND status IN `+unfinished,
			resp, len(resp), o.id); err != nil {
			return fmt.Errorf("stored responses: %w", err)
		}
	}
	return nil
}

// failedObject rewrites a response object as failed with an error.
func failedObject(resp json.RawMessage, code, message string) json.RawMessage {
	var obj map[string]json.RawMessage
	if json.Unmarshal(resp, &obj) != nil {
		obj = map[string]json.RawMessage{}
	}
	obj["status"] = json.RawMessage(`"failed"`)
	obj["error"], _ = json.Marshal(map[string]string{"code": code, "message": message})
	out, _ := json.Marshal(obj)
	return out
}

// Put stores a new response, making room by evicting the oldest finished
// ones when the ledger's bounds require it.
func (s *Store) Put(ctx context.Context, r Record) error {
	size := int64(len(r.Input) + len(r.Response))
	return s.tx(ctx, func(tx *sql.Tx) error {
		if err := s.enforce(ctx, tx, size, ""); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO responses (id, scope, created_at, status, background, previous_id, owner, input, response, bytes)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			r.ID, r.Scope, s.now().UnixMilli(), r.Status, r.Background, r.Previous, s.owner, []byte(r.Input), []byte(r.Response), size)
		return err
	})
}

// Update records a response's new status and object, then makes room from
// the other finished responses. The response being updated is never
// evicted by its own end, nor is its end undone when only running
// responses are left: the ledger is then over its bound until the next
// Put makes room.
func (s *Store) Update(ctx context.Context, id, status string, resp json.RawMessage) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		var in int64
		if err := tx.QueryRowContext(ctx, `SELECT length(input) FROM responses WHERE id = ?`, id).Scan(&in); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return ErrNotFound // deleted meanwhile
			}
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE responses SET status = ?, response = ?, bytes = ? WHERE id = ?`,
			status, []byte(resp), in+int64(len(resp)), id); err != nil {
			return err
		}
		if err := s.enforce(ctx, tx, 0, id); err != nil && !errors.Is(err, ErrFull) {
			return err
		}
		return nil
	})
}

// enforce evicts the oldest finished responses until adding extra bytes
// (and one response, when extra > 0) stays within the bounds. Running
// responses, and the one named keep, are never evicted: if only they are
// left, it fails with ErrFull and evicts nothing.
func (s *Store) enforce(ctx context.Context, tx *sql.Tx, extra int64, keep string) error {
	var count, bytes int64
	if err := tx.QueryRowContext(ctx, `SELECT count(*), coalesce(sum(bytes), 0) FROM responses`).Scan(&count, &bytes); err != nil {
		return err
	}
	if extra > 0 {
		count++
		bytes += extra
	}
	if count <= int64(s.maxCount) && bytes <= s.maxBytes {
		return nil
	}
	rows, err := tx.QueryContext(ctx, `SELECT id, bytes FROM responses WHERE status NOT IN `+unfinished+` AND id != ? ORDER BY created_at, rowid`, keep)
	if err != nil {
		return err
	}
	var evict []string
	for rows.Next() && (count > int64(s.maxCount) || bytes > s.maxBytes) {
		var id string
		var b int64
		if err := rows.Scan(&id, &b); err != nil {
			rows.Close()
			return err
		}
		evict = append(evict, id)
		count--
		bytes -= b
	}
	rows.Close()
	if count > int64(s.maxCount) || bytes > s.maxBytes {
		return ErrFull
	}
	for _, id := range evict {
		if _, err := tx.ExecContext(ctx, `DELETE FROM responses WHERE id = ?`, id); err != nil {
			return err
		}
	}
	return nil
}

// Get returns a response of scope.
func (s *Store) Get(ctx context.Context, scope, id string) (Record, error) {
	r := Record{ID: id}
	var created int64
	var prev sql.NullString
	err := s.db.QueryRowContext(ctx, `SELECT scope, created_at, status, background, previous_id, input, response FROM responses WHERE id = ? AND scope = ?`, id, scope).
		Scan(&r.Scope, &created, &r.Status, &r.Background, &prev, &r.Input, &r.Response)
	if errors.Is(err, sql.ErrNoRows) {
		return Record{}, ErrNotFound
	}
	if err != nil {
		return Record{}, fmt.Errorf("stored response %s: %w", id, err)
	}
	r.CreatedAt, r.Previous = time.UnixMilli(created), prev.String
	return r, nil
}

// Delete removes a response of scope.
func (s *Store) Delete(ctx context.Context, scope, id string) error {
	res, err := s.db.ExecContext(ctx, `DELETE FROM responses WHERE id = ? AND scope = ?`, id, scope)
	if err != nil {
		return fmt.Errorf("delete response %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}

// Usage reports the ledger: responses kept and their bytes.
func (s *Store) Usage(ctx context.Context) (count int, bytes int64, err error) {
	err = s.db.QueryRowContext(ctx, `SELECT count(*), coalesce(sum(bytes), 0) FROM responses`).Scan(&count, &bytes)
	return count, bytes, err
}

// SealKey returns the key that seals reasoning for clients, made once and
// shared by every meridian on this data dir.
func (s *Store) SealKey(ctx context.Context) ([]byte, error) {
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	if _, err := s.db.ExecContext(ctx, `INSERT INTO seal_key (id, key) VALUES (1, ?) ON CONFLICT (id) DO NOTHING`, key); err != nil {
		return nil, fmt.Errorf("seal key: %w", err)
	}
	var stored []byte
	if err := s.db.QueryRowContext(ctx, `SELECT key FROM seal_key WHERE id = 1`).Scan(&stored); err != nil {
		return nil, fmt.Errorf("seal key: %w", err)
	}
	return stored, nil
}

func (s *Store) tx(ctx context.Context, f func(*sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("stored responses: %w", err)
	}
	if err := f(tx); err != nil {
		_ = tx.Rollback()
		if errors.Is(err, ErrFull) || errors.Is(err, ErrNotFound) {
			return err
		}
		return fmt.Errorf("stored responses: %w", err)
	}
	return tx.Commit()
}
