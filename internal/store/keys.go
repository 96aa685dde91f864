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
	// DefaultModel answers its requests for the model "default" (empty:
	// the CLI's own default).
	DefaultModel string
	// Budget bounds what its answers cost, in millionths of a US dollar
	// of API-equivalent cost, per Per (day, week or month; UTC); zero: no
	// bound. BudgetAlert is the spend that raises an alert (zero: none).
	Budget, BudgetAlert int64
	Per                 string
	// Capture is what the request inspector keeps of its requests: off,
	// metadata or content; "" as the server's --capture says.
	Capture string
}

// KeyDays are the UTC days a key's admission counts over: the tokens of
// Today, and the spend of the days from BudgetFrom on.
type KeyDays struct {
	Today, BudgetFrom int64
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
	// Spent sums the cost recorded for it since the budget's first day,
	// in millionths of a dollar.
	Spent int64
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
	// Update replaces a key's scope, limits, expiry, default model and
	// budget with k's (its digest and times stay); ErrNotFound.
	Update(ctx context.Context, k Key) error
	// Revoke ends a key at once; Rotate replaces its digest (the old key
	// stops working). ErrNotFound for an unknown name.
	Revoke(ctx context.Context, name string, at time.Time) error
	Rotate(ctx context.Context, name, digest string, at time.Time) error
	// Admit reads the key's use in one transaction that excludes every
	// other Admit of the same key on any host (hits since since, the
	// running requests at run.At, the tokens and spend of days) and asks admit;
	// when it says yes the run is recorded as a hit and a running
	// request. It reports the answer.
	Admit(ctx context.Context, name string, run KeyRun, since time.Time, days KeyDays, admit func(KeyUse) bool) (bool, error)
	// Renew extends a running request's lease; Release ends it.
	Renew(ctx context.Context, name, id string, until time.Time) error
	Release(ctx context.Context, name, id string) error
	// AddUse counts an answer's tokens and cost (millionths of a dollar)
	// against the key's day of days.Today, and returns the spend of the
	// days from days.BudgetFrom on, this answer's included.
	AddUse(ctx context.Context, name string, days KeyDays, tokens, micros int64) (spent int64, err error)
}

// ModelAlias is a model name a client may send that stands for another
// model (and, when Effort is set, that model at an effort).
type ModelAlias struct {
	Name, Model, Effort string
	Created             time.Time
}

// Aliases keeps the model aliases every host answers by.
type Aliases interface {
	// Put adds an alias or replaces the one of its name.
	Put(ctx context.Context, a ModelAlias) error
	// List returns every alias by name.
	List(ctx context.Context) ([]ModelAlias, error)
	// Remove deletes an alias; ErrNotFound when there is none.
	Remove(ctx context.Context, name string) error
}
