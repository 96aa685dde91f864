// Package apikeys manages the API keys of people and tools: a new or
// rotated key is shown once and only its digest is stored; each key has
// a scope (profiles, models) and limits that every host sharing the store
// enforces.
package apikeys

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/meridian-gw/meridian/internal/capture"
	"github.com/meridian-gw/meridian/internal/keyrule"
	"github.com/meridian-gw/meridian/internal/store"
)

// Key is a key as the store keeps it: its name, digest, scope, limits
// and state.
type Key = store.Key

// Keys are the stored keys, shared by every host.
type Keys = store.Keys

// Spec is a key to create.
type Spec struct {
	Name             string
	Profiles, Models []string
	RPM, Concurrent  int
	TokensPerDay     int64
	Expires          time.Time
	// DefaultModel answers its requests for the model "default".
	DefaultModel string
	// Budget (US dollars of API-equivalent cost per Per; 0: none) is
	// the hard limit; BudgetAlert the spend that alerts (0: 80% of it).
	Budget, BudgetAlert float64
	Per                 string
	// Capture is what the request inspector keeps of its requests (off,
	// metadata, content); "" as the server's --capture says.
	Capture string
}

// DefaultBudgetAlert is the share of a budget that alerts unless a key
// says otherwise.
const DefaultBudgetAlert = 0.8

// check refuses limits that make no sense, naming the flag.
func (s Spec) check(now time.Time) error {
	if err := keyrule.CheckModels(s.Models); err != nil {
		return err
	}
	if s.RPM < 0 || s.Concurrent < 0 || s.TokensPerDay < 0 {
		return errors.New("--rpm, --concurrent and --tokens-per-day are counts: 0 for no limit, else positive")
	}
	if !s.Expires.IsZero() && !s.Expires.After(now) {
		return fmt.Errorf("--expires %s is not in the future", s.Expires.UTC().Format(time.DateOnly))
	}
	if s.Budget < 0 || s.BudgetAlert < 0 {
		return errors.New("--budget and --budget-alert are US dollars: 0 for none, else positive")
	}
	if s.Budget > 0 {
		if err := keyrule.CheckPer(s.Per); err != nil {
			return err
		}
	}
	if s.BudgetAlert > 0 && s.Budget > 0 && s.BudgetAlert > s.Budget {
		return fmt.Errorf("--budget-alert $%.2f is above the budget $%.2f: it would never be reached", s.BudgetAlert, s.Budget)
	}
	if err := capture.CheckMode(s.Capture, true); err != nil {
		return err
	}
	if s.DefaultModel != "" && (strings.ContainsAny(s.DefaultModel, " \t\n") || len(s.DefaultModel) > 256) {
		return fmt.Errorf("--default-model %q: a model name has no spaces", s.DefaultModel)
	}
	return nil
}

// stored is the spec as the store keeps it.
func (s Spec) stored() store.Key {
	k := store.Key{Name: s.Name, Profiles: s.Profiles, Models: s.Models, RPM: s.RPM, Concurrent: s.Concurrent,
		TokensPerDay: s.TokensPerDay, Expires: s.Expires, DefaultModel: s.DefaultModel, Capture: s.Capture}
	if s.Budget > 0 {
		k.Budget, k.Per = keyrule.Micros(s.Budget), s.Per
		k.BudgetAlert = keyrule.Micros(s.BudgetAlert)
		if s.BudgetAlert == 0 {
			k.BudgetAlert = keyrule.Micros(s.Budget * DefaultBudgetAlert)
		}
	}
	return k
}

// specOf is a stored key as a spec, to change some of it.
func specOf(k store.Key) Spec {
	s := Spec{Name: k.Name, Profiles: k.Profiles, Models: k.Models, RPM: k.RPM, Concurrent: k.Concurrent,
		TokensPerDay: k.TokensPerDay, Expires: k.Expires, DefaultModel: k.DefaultModel, Capture: k.Capture}
	if k.Budget > 0 {
		s.Budget, s.BudgetAlert, s.Per = keyrule.Dollars(k.Budget), keyrule.Dollars(k.BudgetAlert), k.Per
	}
	return s
}

// View is a key as the commands print it: the key itself only when it
// was just made.
type View struct {
	Name   string `json:"name"`
	Status string `json:"status"` // active, revoked, expired
	// Key is the key, shown once: at creation and rotation.
	Key          string   `json:"key,omitempty"`
	Profiles     []string `json:"profiles"`
	Models       []string `json:"models"`
	RPM          int      `json:"rpm"`
	Concurrent   int      `json:"concurrent"`
	TokensPerDay int64    `json:"tokens_per_day"`
	DefaultModel string   `json:"default_model,omitempty"`
	// Budget is in US dollars of API-equivalent cost per Per, alerting at
	// BudgetAlert; absent without one.
	Budget      float64    `json:"budget_usd,omitempty"`
	BudgetAlert float64    `json:"budget_alert_usd,omitempty"`
	Per         string     `json:"per,omitempty"`
	Capture     string     `json:"capture,omitempty"`
	Expires     *time.Time `json:"expires,omitempty"`
	Created     time.Time  `json:"created"`
	Revoked     *time.Time `json:"revoked,omitempty"`
	Rotated     *time.Time `json:"rotated,omitempty"`
}

func view(k store.Key, now time.Time) View {
	v := View{Name: k.Name, Status: keyrule.State(k.Revoked, k.Expires, now), Profiles: k.Profiles, Models: k.Models, RPM: k.RPM,
		Concurrent: k.Concurrent, TokensPerDay: k.TokensPerDay, Created: k.Created.UTC(), Expires: when(k.Expires),
		Revoked: when(k.Revoked), Rotated: when(k.Rotated), DefaultModel: k.DefaultModel, Capture: k.Capture}
	if k.Budget > 0 {
		v.Budget, v.BudgetAlert, v.Per = keyrule.Dollars(k.Budget), keyrule.Dollars(k.BudgetAlert), k.Per
	}
	if v.Profiles == nil {
		v.Profiles = []string{}
	}
	if v.Models == nil {
		v.Models = []string{}
	}
	return v
}

func when(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

// newSecret is a key: the prefix and 130 random bits.
func newSecret() string { return keyrule.Prefix + rand.Text() }

// Add creates a key and returns it with the key shown.
func Add(ctx context.Context, keys store.Keys, s Spec, now time.Time) (View, error) {
	if err := keyrule.CheckName(s.Name); err != nil {
		return View{}, err
	}
	if err := s.check(now); err != nil {
		return View{}, err
	}
	secret := newSecret()
	k := s.stored()
	k.Digest, k.Created = keyrule.Digest(secret), now
	if err := keys.Add(ctx, k); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return View{}, fmt.Errorf("a key named %q exists: choose another name, or `meridian key rotate %s`", s.Name, s.Name)
		}
		return View{}, err
	}
	v := view(k, now)
	v.Key = secret
	return v, nil
}

// List returns every key, revoked and expired ones included.
func List(ctx context.Context, keys store.Keys, now time.Time) ([]View, error) {
	list, err := keys.List(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]View, 0, len(list))
	for _, k := range list {
		out = append(out, view(k, now))
	}
	return out, nil
}

// Show returns one key.
func Show(ctx context.Context, keys store.Keys, name string, now time.Time) (View, error) {
	k, err := keys.Get(ctx, name)
	if err != nil {
		return View{}, notFound(name, err)
	}
	return view(k, now), nil
}

// Update changes a key: change edits a copy of its spec (as stored),
// which is checked and stored whole. A revoked key may still be changed
// (its record), never revived.
func Update(ctx context.Context, keys store.Keys, name string, now time.Time, change func(*Spec) error) (View, error) {
	k, err := keys.Get(ctx, name)
	if err != nil {
		return View{}, notFound(name, err)
	}
	s := specOf(k)
	if err := change(&s); err != nil {
		return View{}, err
	}
	s.Name = name
	if err := s.check(now); err != nil {
		return View{}, err
	}
	if err := keys.Update(ctx, s.stored()); err != nil {
		return View{}, notFound(name, err)
	}
	return Show(ctx, keys, name, now)
}

// Revoke ends a key on every host (within a second or two).
func Revoke(ctx context.Context, keys store.Keys, name string, now time.Time) (View, error) {
	if err := keys.Revoke(ctx, name, now); err != nil {
		return View{}, notFound(name, err)
	}
	return Show(ctx, keys, name, now)
}

// Rotate gives a key a new secret, shown once; the old one stops working.
// A revoked key stays revoked: make a new one.
func Rotate(ctx context.Context, keys store.Keys, name string, now time.Time) (View, error) {
	k, err := keys.Get(ctx, name)
	if err != nil {
		return View{}, notFound(name, err)
	}
	if !k.Revoked.IsZero() {
		return View{}, fmt.Errorf("the key %q is revoked: add a new one", name)
	}
	secret := newSecret()
	if err := keys.Rotate(ctx, name, keyrule.Digest(secret), now); err != nil {
		return View{}, notFound(name, err)
	}
	v, err := Show(ctx, keys, name, now)
	v.Key = secret
	return v, err
}

func notFound(name string, err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("no key named %q (`meridian key list` shows them)", name)
	}
	return err
}

// Names reads a comma-separated list flag (--profiles, --models),
// dropping blanks and repeats.
func Names(v string) []string { return keyrule.List(v) }

// ParseExpiry reads --expires: a date (the key ends at its start, UTC), a
// time in RFC 3339, or a span from now in days or a Go duration ("30d",
// "12h").
func ParseExpiry(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	var days int
	if n, err := fmt.Sscanf(s, "%dd", &days); err == nil && n == 1 && fmt.Sprintf("%dd", days) == s && days > 0 {
		return now.AddDate(0, 0, days), nil
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return now.Add(d), nil
	}
	return time.Time{}, fmt.Errorf("--expires %q: want a date (2027-01-31), an RFC 3339 time, or a span such as 30d or 12h", s)
}

// Manager runs the commands on one store's keys at the time they run.
type Manager struct{ keys store.Keys }

// NewManager manages the keys of a store.
func NewManager(keys store.Keys) *Manager { return &Manager{keys: keys} }

// Add makes a key; its expiry is --expires as given (ParseExpiry), its
// scope comma-separated lists.
func (m *Manager) Add(ctx context.Context, s Spec, profiles, models, expires string) (View, error) {
	now := time.Now()
	var err error
	if s.Expires, err = ParseExpiry(expires, now); err != nil {
		return View{}, err
	}
	s.Profiles, s.Models = keyrule.List(profiles), keyrule.List(models)
	return Add(ctx, m.keys, s, now)
}

// List lists the keys now.
func (m *Manager) List(ctx context.Context) ([]View, error) { return List(ctx, m.keys, time.Now()) }

// Show shows one key now.
func (m *Manager) Show(ctx context.Context, name string) (View, error) {
	return Show(ctx, m.keys, name, time.Now())
}

// Update changes a key now (see Update).
func (m *Manager) Update(ctx context.Context, name string, change func(*Spec) error) (View, error) {
	return Update(ctx, m.keys, name, time.Now(), change)
}

// Revoke ends a key now.
func (m *Manager) Revoke(ctx context.Context, name string) (View, error) {
	return Revoke(ctx, m.keys, name, time.Now())
}

// Rotate gives a key a new secret now.
func (m *Manager) Rotate(ctx context.Context, name string) (View, error) {
	return Rotate(ctx, m.keys, name, time.Now())
}
