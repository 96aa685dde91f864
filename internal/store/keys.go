package store

import (
	"context"
	"time"
)

// Key is one API key for a person or tool. The key itself is never kept:
// only its digest, which is what a request's key is looked up by.
type Key struct {
	Name   string
	Digest string
	// Profiles and Models it may use (empty: any); models may be
	// patterns.
	Profiles, Models []string
	// RPM, Concurrent and TokensPerDay bound its use (0: no bound).
	RPM, Concurrent int
	TokensPerDay    int64
	// Expires ends it (zero: never); Revoked, once set, ends it at once.
	Expires, Created, Revoked, Rotated time.Time
}

// KeyUse is what a key's limits count when a request arrives.
type KeyUse struct {
	// Hits are its admissions since the window's start.
	Hits []time.Time
	// Running counts its admitted requests not yet released whose lease
	// has not lapsed (a host that died holding some releases them so).
	Running int
	// TokensToday sums the tokens recorded for it on the asked day.
	TokensToday int64
}

// KeyRun is one admitted request, for as long as it runs.
type KeyRun struct {
	ID, Host string
	// At is the admission; Until when its lease lapses unless renewed.
	At, Until time.Time
}

// Keys keeps API keys and counts their use, shared by every host.
type Keys interface {
	// Add stores a new key; ErrConflict when the name or the digest is
	// taken.
	Add(ctx context.Context, k Key) error
	// Get and ByDigest find a key, revoked or not; ErrNotFound.
	Get(ctx context.Context, name string) (Key, error)
	ByDigest(ctx context.Context, digest string) (Key, error)
	// List returns every key by name.
	List(ctx context.Context) ([]Key, error)
	// Revoke ends a key at once; Rotate replaces its digest (the old key
	// stops working). ErrNotFound for an unknown name.
	Revoke(ctx context.Context, name string, at time.Time) error
	Rotate(ctx context.Context, name, digest string, at time.Time) error
	// Admit reads the key's use in one transaction that excludes every
	// other Admit of the same key on any host (hits since since, the
	// running requests at run.At, the tokens of day) and asks admit;
	// when it says yes the run is recorded as a hit and a running
	// request. It reports the answer.
	Admit(ctx context.Context, name string, run KeyRun, since time.Time, day int64, admit func(KeyUse) bool) (bool, error)
	// Renew extends a running request's lease; Release ends it.
	Renew(ctx context.Context, name, id string, until time.Time) error
	Release(ctx context.Context, name, id string) error
	// AddTokens counts an answer's tokens against the key's day.
	AddTokens(ctx context.Context, name string, day, tokens int64) error
}
