// Package session keeps what Meridian knows about conversations across
// requests, restarts and meridian processes: the durable mapping from a
// conversation key to the CLI session that holds it (with the lineage
// state that proves what it holds), and the turn leases that let only one
// turn of a conversation run at a time.
package session

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/meridian-gw/meridian/internal/lineage"
)

// ErrConflict is returned by Publish when the mapping changed since it was
// loaded: another turn published first.
var ErrConflict = errors.New("session: the conversation changed since it was loaded")

// Mapping is a conversation as a CLI session holds it.
type Mapping struct {
	Profile   string
	Key       string
	Client    string
	SessionID string // the CLI's session id
	State     lineage.State
	// Cwd is the CLI's working directory: resuming needs the same one.
	Cwd       string
	ClientCwd string
	Model     string
	// Version is 0 for a conversation never published, and grows by one
	// with each publish.
	Version int64
	Counts  Counts
	// LastInputBytes is what the last turn wrote to the CLI.
	LastInputBytes int
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// Counts tallies the lineage verdicts of a conversation's published turns.
type Counts struct {
	Continuations int `json:"continuation"`
	Compactions   int `json:"compaction"`
	Undos         int `json:"undo"`
	Divergences   int `json:"diverged"`
}

// Store is the durable side of sessions.
type Store struct {
	db  *sql.DB
	now func() time.Time
	// max bounds the conversations kept; the least recently updated go
	// first when a new one would exceed it.
	max int
}

// DefaultMaxConversations is how many conversations a store keeps.
const DefaultMaxConversations = 10_000

// NewStore uses an opened database (see package store). now is the clock;
// nil means time.Now.
func NewStore(db *sql.DB, now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{db: db, now: now, max: DefaultMaxConversations}
}

const mappingColumns = `profile, key, client, cli_session_id, digests, pins, tail, tail_slot, cwd, client_cwd, model, version,
	continuations, compactions, undos, divergences, last_input_bytes, created_at, updated_at`

// Load returns the conversation's mapping; a conversation never published
// comes back with Version 0 and an empty State.
func (s *Store) Load(ctx context.Context, profile, key string) (Mapping, error) {
	row := s.db.QueryRowContext(ctx, `SELECT `+mappingColumns+` FROM conversations WHERE profile = ? AND key = ?`, profile, key)
	m, err := scanMapping(row)
	if errors.Is(err, sql.ErrNoRows) {
		return Mapping{Profile: profile, Key: key}, nil
	}
	if err != nil {
		return Mapping{}, fmt.Errorf("load conversation %q: %w", key, err)
	}
	return m, nil
}

// ServedBy returns the profile that last answered conversation key, ""
// when none did.
func (s *Store) ServedBy(ctx context.Context, key string) (string, error) {
	var profile string
	err := s.db.QueryRowContext(ctx, `SELECT profile FROM conversations WHERE key = ? ORDER BY updated_at DESC LIMIT 1`, key).Scan(&profile)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("which profile served conversation %q: %w", key, err)
	}
	return profile, nil
}

// List returns a profile's most recently updated conversations, newest
// first.
func (s *Store) List(ctx context.Context, profile string, limit int) ([]Mapping, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+mappingColumns+` FROM conversations WHERE profile = ? ORDER BY updated_at DESC LIMIT ?`, profile, limit)
	if err != nil {
		return nil, fmt.Errorf("list conversations: %w", err)
	}
	defer rows.Close()
	var out []Mapping
	for rows.Next() {
		m, err := scanMapping(rows)
		if err != nil {
			return nil, fmt.Errorf("list conversations: %w", err)
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// SessionIDs lists the CLI sessions every stored conversation continues
// from: the transcripts a later turn may resume.
func (s *Store) SessionIDs(ctx context.Context) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT cli_session_id FROM conversations`)
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("list sessions: %w", err)
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// Publish stores m as the conversation's new mapping if its version is
// still prev (0: the conversation must not exist yet), counting the
// verdict that produced it. It returns the new version, or ErrConflict.
// A version beside an error means the mapping was stored and only the
// clean-up after it (pruning old conversations) failed.
func (s *Store) Publish(ctx context.Context, m Mapping, prev int64, verdict lineage.Kind) (int64, error) {
	digests, pins, tail, err := encodeState(m.State)
	if err != nil {
		return 0, err
	}
	now := s.now().UnixMilli()
	c := m.Counts
	switch verdict {
	case lineage.Continuation:
		c.Continuations++
	case lineage.Compaction:
		c.Compactions++
	case lineage.Undo:
		c.Undos++
	default:
		c.Divergences++
	}
	var res sql.Result
	if prev == 0 {
		res, err = s.db.ExecContext(ctx, `INSERT INTO conversations (`+mappingColumns+`, message_count)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (profile, key) DO NOTHING`,
			m.Profile, m.Key, m.Client, m.SessionID, digests, pins, tail, m.State.Slot, m.Cwd, m.ClientCwd, m.Model,
			c.Continuations, c.Compactions, c.Undos, c.Divergences, m.LastInputBytes, now, now, len(m.State.Messages))
	} else {
		res, err = s.db.ExecContext(ctx, `UPDATE conversations SET client = ?, cli_session_id = ?, digests = ?, pins = ?, tail = ?,
			tail_slot = ?, cwd = ?, client_cwd = ?, model = ?, version = version + 1, continuations = ?, compactions = ?, undos = ?,
			divergences = ?, last_input_bytes = ?, updated_at = ?, message_count = ?
			WHERE profile = ? AND key = ? AND version = ?`,
			m.Client, m.SessionID, digests, pins, tail, m.State.Slot, m.Cwd, m.ClientCwd, m.Model,
			c.Continuations, c.Compactions, c.Undos, c.Divergences, m.LastInputBytes, now, len(m.State.Messages),
			m.Profile, m.Key, prev)
	}
	if err != nil {
		return 0, fmt.Errorf("publish conversation %q: %w", m.Key, err)
	}
	n, err := res.RowsAffected()
	switch {
	case err != nil:
		return 0, fmt.Errorf("publish conversation %q: %w", m.Key, err)
	case n != 1:
		return 0, ErrConflict
	}
	if prev == 0 {
		if err := s.prune(ctx); err != nil {
			return 1, err
		}
	}
	return prev + 1, nil
}

// prune drops the least recently updated conversations beyond the bound.
// Their CLI transcripts stay with the CLI; a pruned conversation that comes
// back starts fresh.
func (s *Store) prune(ctx context.Context) error {
	_, err := s.db.ExecContext(ctx, `DELETE FROM conversations WHERE rowid IN (
		SELECT rowid FROM conversations ORDER BY updated_at ASC
		LIMIT max(0, (SELECT count(*) FROM conversations) - ?))`, s.max)
	if err != nil {
		return fmt.Errorf("prune conversations: %w", err)
	}
	return nil
}

type scanner interface{ Scan(dest ...any) error }

func scanMapping(row scanner) (Mapping, error) {
	var m Mapping
	var digests, tail []byte
	var pins string
	var created, updated int64
	err := row.Scan(&m.Profile, &m.Key, &m.Client, &m.SessionID, &digests, &pins, &tail, &m.State.Slot, &m.Cwd, &m.ClientCwd, &m.Model,
		&m.Version, &m.Counts.Continuations, &m.Counts.Compactions, &m.Counts.Undos, &m.Counts.Divergences,
		&m.LastInputBytes, &created, &updated)
	if err != nil {
		return m, err
	}
	slot := m.State.Slot
	m.State, err = decodeState(digests, pins, tail)
	m.State.Slot = slot
	m.CreatedAt, m.UpdatedAt = time.UnixMilli(created), time.UnixMilli(updated)
	return m, err
}

// A state is stored as packed digests and a JSON list of pins.

func encodeState(st lineage.State) (digests []byte, pins string, tail []byte, err error) {
	if len(st.Pins) != len(st.Messages) {
		return nil, "", nil, fmt.Errorf("state has %d messages and %d pins", len(st.Messages), len(st.Pins))
	}
	p, err := json.Marshal(st.Pins)
	if err != nil {
		return nil, "", nil, err
	}
	return pack(st.Messages), string(p), pack(st.Tail), nil
}

func decodeState(digests []byte, pins string, tail []byte) (lineage.State, error) {
	var st lineage.State
	var err error
	if st.Messages, err = unpack(digests); err != nil {
		return st, err
	}
	if st.Tail, err = unpack(tail); err != nil {
		return st, err
	}
	if err := json.Unmarshal([]byte(pins), &st.Pins); err != nil {
		return st, fmt.Errorf("pins: %w", err)
	}
	if len(st.Pins) != len(st.Messages) {
		return st, fmt.Errorf("stored state has %d messages and %d pins", len(st.Messages), len(st.Pins))
	}
	return st, nil
}

func pack(ds []lineage.Digest) []byte {
	out := make([]byte, 0, len(ds)*len(lineage.Digest{}))
	for _, d := range ds {
		out = append(out, d[:]...)
	}
	return out
}

func unpack(b []byte) ([]lineage.Digest, error) {
	size := len(lineage.Digest{})
	if len(b)%size != 0 {
		return nil, fmt.Errorf("digest list of %d bytes", len(b))
	}
	out := make([]lineage.Digest, len(b)/size)
	for i := range out {
		copy(out[i][:], b[i*size:])
	}
	return out, nil
}

// MaxConsumed bounds the remembered tool results.
const MaxConsumed = 10_000

// MarkConsumed records tool results of a conversation as delivered to a
// CLI.
func (s *Store) MarkConsumed(ctx context.Context, profile, conversation string, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	now := s.now().UnixMilli()
	for _, id := range ids {
		if _, err := s.db.ExecContext(ctx, `INSERT INTO consumed_tool_results (profile, conversation, tool_use_id, consumed_at)
			VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING`, profile, conversation, id, now); err != nil {
			return fmt.Errorf("mark tool results consumed: %w", err)
		}
	}
	if _, err := s.db.ExecContext(ctx, `DELETE FROM consumed_tool_results WHERE rowid IN (
		SELECT rowid FROM consumed_tool_results ORDER BY consumed_at ASC
		LIMIT max(0, (SELECT count(*) FROM consumed_tool_results) - ?))`, MaxConsumed); err != nil {
		return fmt.Errorf("prune delivered tool results: %w", err)
	}
	return nil
}

// Consumed returns which of a conversation's ids were already delivered.
func (s *Store) Consumed(ctx context.Context, profile, conversation string, ids []string) ([]string, error) {
	var out []string
	for _, id := range ids {
		var n int
		err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM consumed_tool_results WHERE profile = ? AND conversation = ? AND tool_use_id = ?`,
			profile, conversation, id).Scan(&n)
		if err != nil {
			return nil, fmt.Errorf("check consumed tool results: %w", err)
		}
		if n > 0 {
			out = append(out, id)
		}
	}
	return out, nil
}
