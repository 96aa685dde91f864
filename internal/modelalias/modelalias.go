// Package modelalias maps the model names clients insist on to the models
// that answer them: an alias names a model and, optionally, an effort.
// The store keeps the aliases every host answers by; the settings file
// may add more to one host. A request's "default" model is its API key's
// default model when the key has one.
package modelalias

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/meridian-gw/meridian/internal/store"
)

// Alias is one alias: Name stands for Model at Effort ("" keeps the
// request's). Source says where it is kept: "store" or "settings".
type Alias struct {
	Name   string `json:"name"`
	Model  string `json:"model"`
	Effort string `json:"effort,omitempty"`
	Source string `json:"source"`
}

// Where an alias is kept.
const (
	FromStore    = "store"
	FromSettings = "settings"
)

// efforts are the efforts an alias may set, as the APIs take them.
var efforts = []string{"low", "medium", "high", "xhigh", "max"}

// Check refuses an alias that could not be used: names are what a client
// sends as its model (printable ASCII, no spaces), an alias may not
// stand for itself, and the effort is one the APIs take.
func Check(name, model, effort string) error {
	for what, v := range map[string]string{"alias": name, "model": model} {
		if v == "" || len(v) > 256 {
			return fmt.Errorf("an %s name is 1 to 256 characters", what)
		}
		for i := 0; i < len(v); i++ {
			if c := v[i]; c <= ' ' || c > '~' {
				return fmt.Errorf("%s %q: a model name is printable ASCII without spaces", what, v)
			}
		}
	}
	if name == model {
		return fmt.Errorf("the alias %q would stand for itself", name)
	}
	if name == "default" {
		return fmt.Errorf(`"default" is the CLI's own default model (or a key's --default-model), not an alias`)
	}
	if effort != "" && !slices.Contains(efforts, effort) {
		return fmt.Errorf("--effort %q: want one of low, medium, high, xhigh, max", effort)
	}
	return nil
}

// bookTTL is how long the aliases read from the store are trusted: an
// alias added or removed on any host is answered by here within it.
const bookTTL = time.Second

// Book is the aliases a host answers by: the store's, read again on the
// first request after bookTTL, over the settings file's (a store alias of
// the same name wins: it is the one every host shares). When the store
// cannot be read, the aliases last read stand.
type Book struct {
	store    store.Aliases // nil: the settings' alone
	settings map[string]Alias
	mu       sync.Mutex
	read     time.Time
	by       map[string]Alias
}

// NewBook answers by the store's aliases over the settings file's.
func NewBook(st store.Aliases, settings []Alias) *Book {
	b := &Book{store: st, settings: map[string]Alias{}}
	for _, a := range settings {
		a.Source = FromSettings
		b.settings[a.Name] = a
	}
	return b
}

// Resolve is what a request for model asks for: the alias's model and
// effort when model is an alias. One step only: an alias of an alias
// is answered by the model the first names, so no chain can loop.
func (b *Book) Resolve(ctx context.Context, model string, now time.Time) (Alias, bool) {
	if b == nil {
		return Alias{}, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.fresh(ctx, now)
	a, ok := b.by[model]
	return a, ok
}

// List is every alias, by name.
func (b *Book) List(ctx context.Context, now time.Time) []Alias {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.fresh(ctx, now)
	out := make([]Alias, 0, len(b.by))
	for _, a := range b.by {
		out = append(out, a)
	}
	slices.SortFunc(out, func(x, y Alias) int { return strings.Compare(x.Name, y.Name) })
	return out
}

// fresh reads the store again when what was read is older than bookTTL.
// Called with mu held.
func (b *Book) fresh(ctx context.Context, now time.Time) {
	if b.by != nil && (b.store == nil || now.Sub(b.read) < bookTTL) {
		return
	}
	var stored []store.ModelAlias
	if b.store != nil {
		var err error
		if stored, err = b.store.List(ctx); err != nil && b.by != nil {
			return
		}
	}
	by := make(map[string]Alias, len(b.settings)+len(stored))
	for n, a := range b.settings {
		by[n] = a
	}
	for _, a := range stored {
		by[a.Name] = Alias{Name: a.Name, Model: a.Model, Effort: a.Effort, Source: FromStore}
	}
	b.by, b.read = by, now
}

// Add keeps an alias in the store, for every host.
func Add(ctx context.Context, st store.Aliases, name, model, effort string, now time.Time) error {
	if err := Check(name, model, effort); err != nil {
		return err
	}
	return st.Put(ctx, store.ModelAlias{Name: name, Model: model, Effort: effort, Created: now})
}

// Remove deletes an alias from the store.
func Remove(ctx context.Context, st store.Aliases, name string) error {
	if err := st.Remove(ctx, name); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("no alias named %q in the store (`meridian alias list` shows them; the settings file's are changed there)", name)
		}
		return err
	}
	return nil
}
