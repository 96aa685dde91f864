// Package session keeps what Meridian knows about conversations across
// requests, restarts and meridian processes: the durable mapping from a
// conversation key to the CLI session that holds it (with the lineage
// state that proves what it holds), and the turn leases that let only one
// turn of a conversation run at a time.
package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/meridian-gw/meridian/internal/lineage"
	"github.com/meridian-gw/meridian/internal/store"
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
	// Holder is the process that published the last turn.
	Holder    store.Owner
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Counts tallies the lineage verdicts of a conversation's published turns.
type Counts struct {
	Continuations int `json:"continuation"`
	Compactions   int `json:"compaction"`
	Undos         int `json:"undo"`
	Divergences   int `json:"diverged"`
}

// Owner names a meridian process (host id and incarnation): the holder of
// a conversation.
type Owner = store.Owner

// Store is the durable side of sessions, over the store's conversations.
type Store struct {
	c    store.Conversations
	now  func() time.Time
	self store.Owner
}

// HeldBy makes every publish name owner as the conversation's holder:
// the process whose CLI holds it now.
func (s *Store) HeldBy(owner store.Owner) *Store {
	s.self = owner
	return s
}

// Self is the holder this store's publishes name.
func (s *Store) Self() Owner { return s.self }

// NewStore uses the store's conversations. now is the clock; nil means
// time.Now.
func NewStore(c store.Conversations, now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{c: c, now: now}
}

// Load returns the conversation's mapping; a conversation never published
// comes back with Version 0 and an empty State.
func (s *Store) Load(ctx context.Context, profile, key string) (Mapping, error) {
	c, ok, err := s.c.Load(ctx, profile, key)
	if err != nil {
		return Mapping{}, fmt.Errorf("load conversation %q: %w", key, err)
	}
	if !ok {
		return Mapping{Profile: profile, Key: key}, nil
	}
	m, err := fromRecord(c)
	if err != nil {
		return Mapping{}, fmt.Errorf("load conversation %q: %w", key, err)
	}
	return m, nil
}

// Latest returns conversation key's mapping under the profile that last
// answered it; one no profile answered comes back with no Profile and
// Version 0.
func (s *Store) Latest(ctx context.Context, key string) (Mapping, error) {
	c, ok, err := s.c.Latest(ctx, key)
	if err != nil {
		return Mapping{}, fmt.Errorf("load conversation %q: %w", key, err)
	}
	if !ok {
		return Mapping{Key: key}, nil
	}
	m, err := fromRecord(c)
	if err != nil {
		return Mapping{}, fmt.Errorf("load conversation %q: %w", key, err)
	}
	return m, nil
}

// List returns a profile's most recently updated conversations, newest
// first.
func (s *Store) List(ctx context.Context, profile string, limit int) ([]Mapping, error) {
	cs, err := s.c.List(ctx, profile, limit)
	if err != nil {
		return nil, err
	}
	out := make([]Mapping, 0, len(cs))
	for _, c := range cs {
		m, err := fromRecord(c)
		if err != nil {
			return nil, fmt.Errorf("list conversations: %w", err)
		}
		out = append(out, m)
	}
	return out, nil
}

// SessionIDs lists the CLI sessions every stored conversation continues
// from: the transcripts a later turn may resume.
func (s *Store) SessionIDs(ctx context.Context) ([]string, error) { return s.c.SessionIDs(ctx) }

// Turn is what a publish writes beside the mapping: the lease that must
// still hold the conversation, and the tool results the turn delivered.
type Turn struct {
	Lease     *Lease // nil: published without a lease
	Delivered []string
}

// Publish stores m as the conversation's new mapping if its version is
// still prev (0: the conversation must not exist yet) and the turn's lease
// still holds it, counting the verdict that produced it and recording the
// delivered tool results, all at once. It returns the new version, or
// ErrConflict (ErrFenced: the lease was taken over). A version beside an
// error means the mapping was stored and only the clean-up after it
// (pruning old conversations) failed.
func (s *Store) Publish(ctx context.Context, m Mapping, prev int64, verdict lineage.Kind, turn Turn) (int64, error) {
	c, err := toRecord(m)
	if err != nil {
		return 0, err
	}
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
	c.Holder = s.self
	p := store.Publish{Prev: prev, Consumed: turn.Delivered, Now: s.now()}
	if turn.Lease != nil {
		p.Fence = turn.Lease.token
	}
	v, err := s.c.Publish(ctx, c, p)
	if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrFenced) {
		return 0, fmt.Errorf("%w: %w", ErrConflict, err)
	}
	if err != nil {
		return v, fmt.Errorf("publish conversation %q: %w", m.Key, err)
	}
	return v, nil
}

// Consumed returns which of a conversation's ids were already delivered.
func (s *Store) Consumed(ctx context.Context, profile, conversation string, ids []string) ([]string, error) {
	return s.c.Consumed(ctx, profile, conversation, ids)
}

func toRecord(m Mapping) (store.Conversation, error) {
	digests, pins, tail, err := encodeState(m.State)
	if err != nil {
		return store.Conversation{}, err
	}
	return store.Conversation{Profile: m.Profile, Key: m.Key, Client: m.Client, SessionID: m.SessionID,
		Digests: digests, Pins: pins, Tail: tail, Slot: m.State.Slot, Messages: len(m.State.Messages),
		Cwd: m.Cwd, ClientCwd: m.ClientCwd, Model: m.Model, Version: m.Version,
		Continuations: m.Counts.Continuations, Compactions: m.Counts.Compactions, Undos: m.Counts.Undos, Divergences: m.Counts.Divergences,
		LastInputBytes: m.LastInputBytes, Holder: m.Holder, CreatedAt: m.CreatedAt, UpdatedAt: m.UpdatedAt}, nil
}

func fromRecord(c store.Conversation) (Mapping, error) {
	st, err := decodeState(c.Digests, c.Pins, c.Tail)
	st.Slot = c.Slot
	return Mapping{Profile: c.Profile, Key: c.Key, Client: c.Client, SessionID: c.SessionID, State: st,
		Cwd: c.Cwd, ClientCwd: c.ClientCwd, Model: c.Model, Version: c.Version,
		Counts:         Counts{Continuations: c.Continuations, Compactions: c.Compactions, Undos: c.Undos, Divergences: c.Divergences},
		LastInputBytes: c.LastInputBytes, Holder: c.Holder, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt}, err
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
