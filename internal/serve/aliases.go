package serve

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"time"

	"github.com/meridian-gw/meridian/internal/config"
	"github.com/meridian-gw/meridian/internal/modelalias"
	"github.com/meridian-gw/meridian/internal/store"
)

// aliasBook answers by the store's aliases over the settings file's,
// refusing a settings alias that could not be used.
func aliasBook(st store.Aliases, settings map[string]config.Alias) (*modelalias.Book, error) {
	names := make([]string, 0, len(settings))
	for n := range settings {
		names = append(names, n)
	}
	sort.Strings(names)
	list := make([]modelalias.Alias, 0, len(names))
	for _, n := range names {
		a := settings[n]
		if err := modelalias.Check(n, a.Model, a.Effort); err != nil {
			return nil, fmt.Errorf("settings file, aliases.%s: %w", n, err)
		}
		list = append(list, modelalias.Alias{Name: n, Model: a.Model, Effort: a.Effort})
	}
	return modelalias.NewBook(st, list), nil
}

// AliasAdd keeps an alias in the store, for every host; one of the same
// name is replaced.
func AliasAdd(ctx context.Context, dataDir, storeDSN, name, model, effort string) error {
	return withAliases(ctx, dataDir, storeDSN, func(st store.Aliases) error {
		return modelalias.Add(ctx, st, name, model, effort, time.Now())
	})
}

// AliasList lists the aliases: the store's, over the settings file's.
func AliasList(ctx context.Context, dataDir, storeDSN, configPath string) ([]modelalias.Alias, error) {
	settings, err := config.Load(configPath)
	if err != nil {
		return nil, err
	}
	var out []modelalias.Alias
	err = withAliases(ctx, dataDir, storeDSN, func(st store.Aliases) error {
		b, err := aliasBook(st, settings.Aliases)
		if err != nil {
			return err
		}
		out = b.List(ctx, time.Now())
		return nil
	})
	return out, err
}

// AliasRemove deletes an alias from the store.
func AliasRemove(ctx context.Context, dataDir, storeDSN, name string) error {
	return withAliases(ctx, dataDir, storeDSN, func(st store.Aliases) error { return modelalias.Remove(ctx, st, name) })
}

func withAliases(ctx context.Context, dataDir, storeDSN string, f func(store.Aliases) error) error {
	st, err := openStores(ctx, Config{DataDir: dataDir, Store: storeDSN}, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	defer st.close()
	return f(st.shared.Aliases)
}
