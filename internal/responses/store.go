// Package responses keeps Responses API responses: stored responses in
// the store every host shares, bounded by one oldest-first ledger of count
// and bytes and scoped to the credential that created them; the
// background runs that answer them detached from any request; and each
// background response's bounded event log, which a client can replay from
// any point and follow live, on the host that runs it or any other.
package responses

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/meridian-gw/meridian/internal/store"
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
	rs      store.Responses
	events  store.Events
	signals store.Signals
	owners  store.Owners
	lim     store.ResponseLimits
	now     func() time.Time
}

// Config bounds a store.
type Config struct {
	MaxCount int
	MaxBytes int64
	Now      func() time.Time
}

// Open uses the store's responses, event logs and signals, its responses
// owned by owners.Self(). It enforces the ledger's bounds once, so lowered
// limits apply at start, and fails the unfinished responses whose process
// is gone: a restart never leaves a response in progress forever.
func Open(ctx context.Context, st *store.Store, owners store.Owners, cfg Config) (*Store, error) {
	if cfg.MaxCount <= 0 {
		cfg.MaxCount = DefaultMaxCount
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Store{rs: st.Responses, events: st.Events, signals: st.Signals, owners: owners,
		lim: store.ResponseLimits{MaxCount: cfg.MaxCount, MaxBytes: cfg.MaxBytes}, now: cfg.Now}
	if _, _, err := s.Sweep(ctx); err != nil {
		return nil, err
	}
	if err := s.rs.Enforce(ctx, s.lim); err != nil {
		return nil, fmt.Errorf("stored responses: %w", err)
	}
	return s, nil
}

// Sweep fails every unfinished response whose owner process is gone (on
// this host, at once; elsewhere, once its heartbeat expired), and lists
// the unfinished ones this process owns that a cancel was asked for;
// pending says some response is still unfinished.
func (s *Store) Sweep(ctx context.Context) (cancel []string, pending bool, err error) {
	unfinished, err := s.rs.Unfinished(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("stored responses: %w", err)
	}
	self := s.owners.Self()
	for _, r := range unfinished {
		if r.Owner == self {
			pending = true
			if r.Cancel {
				cancel = append(cancel, r.ID)
			}
			continue
		}
		alive, err := s.owners.Alive(ctx, r.Owner)
		if err != nil {
			return nil, false, fmt.Errorf("stored responses: %w", err)
		}
		if alive {
			pending = true
			continue
		}
		resp := failedObject(r.Object, "server_error", "the meridian answering this response stopped before it finished; send the request again")
		if _, err := s.rs.Fail(ctx, r.ID, resp); err != nil {
			return nil, false, fmt.Errorf("stored responses: %w", err)
		}
		if err := s.events.End(ctx, r.ID); err != nil {
			return nil, false, fmt.Errorf("stored responses: %w", err)
		}
		_ = s.signals.Notify(ctx, topicEvents, r.ID)
	}
	return cancel, pending, nil
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

func ownErr(err error) error {
	switch {
	case errors.Is(err, store.ErrFull):
		return ErrFull
	case errors.Is(err, store.ErrNotFound):
		return ErrNotFound
	case err != nil:
		return fmt.Errorf("stored responses: %w", err)
	}
	return nil
}

// Put stores a new response, making room by evicting the oldest finished
// ones when the ledger's bounds require it.
func (s *Store) Put(ctx context.Context, r Record) error {
	return ownErr(s.rs.Put(ctx, store.Response{ID: r.ID, Scope: r.Scope, CreatedAt: s.now(), Status: r.Status, Background: r.Background,
		Previous: r.Previous, Owner: s.owners.Self(), Input: r.Input, Object: r.Response}, s.lim))
}

// Update records a response's new status and object, then makes room from
// the other finished responses. The response being updated is never
// evicted by its own end, nor is its end undone when only running
// responses are left: the ledger is then over its bound until the next
// Put makes room.
func (s *Store) Update(ctx context.Context, id, status string, resp json.RawMessage) error {
	return ownErr(s.rs.Update(ctx, id, status, resp, s.lim))
}

// Get returns a response of scope.
func (s *Store) Get(ctx context.Context, scope, id string) (Record, error) {
	r, err := s.rs.Get(ctx, scope, id)
	if err != nil {
		return Record{}, ownErr(err)
	}
	return Record{ID: r.ID, Scope: r.Scope, CreatedAt: r.CreatedAt, Status: r.Status, Background: r.Background,
		Previous: r.Previous, Input: r.Input, Response: r.Object}, nil
}

// Delete removes a response of scope, and its event log.
func (s *Store) Delete(ctx context.Context, scope, id string) error {
	return ownErr(s.rs.Delete(ctx, scope, id))
}

// Usage reports the ledger: responses kept and their bytes.
func (s *Store) Usage(ctx context.Context) (count int, bytes int64, err error) {
	count, bytes, err = s.rs.Usage(ctx)
	return count, bytes, ownErr(err)
}

// SealKey returns the key that seals reasoning for clients, made once and
// shared by every meridian on the store.
func (s *Store) SealKey(ctx context.Context) ([]byte, error) {
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	stored, err := s.rs.SealKey(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("seal key: %w", err)
	}
	return stored, nil
}
