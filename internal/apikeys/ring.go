package apikeys

import (
	"context"
	"sync"
	"time"

	"github.com/meridian-gw/meridian/internal/keyrule"
	"github.com/meridian-gw/meridian/internal/store"
)

// ringTTL is how long the keys read from the store are trusted: a key
// added, revoked or rotated on any host takes effect here within it (and
// the time one List takes).
const ringTTL = time.Second

// Ring is the store's keys by digest, read again on the first request
// after ringTTL: a map lookup per request, one query a second at most,
// and nothing at all while no request comes. When the store cannot be
// read, the keys last read stand; with none read yet, the error is
// returned.
type Ring struct {
	keys store.Keys
	mu   sync.Mutex
	read time.Time
	by   map[string]store.Key // by digest
}

// NewRing reads keys, in the store every host shares.
func NewRing(keys store.Keys) *Ring { return &Ring{keys: keys} }

// Lookup finds the key whose secret was presented; any reports whether
// any key exists at all.
func (kr *Ring) Lookup(ctx context.Context, secret string, now time.Time) (k store.Key, found, any bool, err error) {
	kr.mu.Lock()
	defer kr.mu.Unlock()
	if err := kr.fresh(ctx, now); err != nil {
		return k, false, false, err
	}
	k, found = kr.by[keyrule.Digest(secret)]
	return k, found, len(kr.by) > 0, nil
}

// Active finds the key of a secret if it is in force now.
func (kr *Ring) Active(ctx context.Context, secret string, now time.Time) (store.Key, bool) {
	if secret == "" {
		return store.Key{}, false
	}
	k, found, _, err := kr.Lookup(ctx, secret, now)
	if err != nil || !found || keyrule.State(k.Revoked, k.Expires, now) != keyrule.Active {
		return store.Key{}, false
	}
	return k, true
}

// Named finds a key by its name: a request another host forwarded names
// the key it came with.
func (kr *Ring) Named(ctx context.Context, name string, now time.Time) (store.Key, bool, error) {
	return kr.Find(ctx, now, func(k store.Key) bool { return k.Name == name })
}

// Find returns a key that match accepts.
func (kr *Ring) Find(ctx context.Context, now time.Time, match func(store.Key) bool) (store.Key, bool, error) {
	kr.mu.Lock()
	defer kr.mu.Unlock()
	if err := kr.fresh(ctx, now); err != nil {
		return store.Key{}, false, err
	}
	for _, k := range kr.by {
		if match(k) {
			return k, true, nil
		}
	}
	return store.Key{}, false, nil
}

// fresh reads the keys again when those read are older than ringTTL.
// Called with mu held.
func (kr *Ring) fresh(ctx context.Context, now time.Time) error {
	if kr.by != nil && now.Sub(kr.read) < ringTTL {
		return nil
	}
	list, err := kr.keys.List(ctx)
	if err != nil {
		if kr.by != nil {
			return nil
		}
		return err
	}
	kr.by, kr.read = make(map[string]store.Key, len(list)), now
	for _, k := range list {
		kr.by[k.Digest] = k
	}
	return nil
}
