package serve

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/meridian-gw/meridian/internal/alerts"
	"github.com/meridian-gw/meridian/internal/apikeys"
	"github.com/meridian-gw/meridian/internal/store"
)

// Alert sinks live in the store every meridian sharing it reads (the data
// dir's, or the PostgreSQL database storeDSN names), so a sink added on
// one host serves them all from their next alert.

// AlertAdd records a webhook sink and returns its signing secret, shown
// once.
func AlertAdd(ctx context.Context, dataDir, storeDSN, name, url, format string) (secret string, err error) {
	if err := alerts.CheckURL(url); err != nil {
		return "", err
	}
	if format != alerts.FormatJSON && format != alerts.FormatSlack {
		return "", fmt.Errorf("--format %q: want %s or %s", format, alerts.FormatJSON, alerts.FormatSlack)
	}
	if name == "" {
		return "", errors.New("an alert sink needs a name")
	}
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	secret = "whsec_" + base64.RawURLEncoding.EncodeToString(b)
	err = withAlerts(ctx, dataDir, storeDSN, func(a store.Alerts) error {
		err := a.AddSink(ctx, store.AlertSink{Name: name, URL: url, Format: format, Secret: secret, Created: time.Now()})
		if errors.Is(err, store.ErrConflict) {
			return fmt.Errorf("an alert sink named %s exists; remove it first", name)
		}
		return err
	})
	return secret, err
}

// AlertSinks lists the sinks (their secrets left out) and the latest
// alerts sent.
func AlertSinks(ctx context.Context, dataDir, storeDSN string) (sinks []store.AlertSink, recent []store.SentAlert, err error) {
	err = withAlerts(ctx, dataDir, storeDSN, func(a store.Alerts) error {
		if sinks, err = a.Sinks(ctx); err != nil {
			return err
		}
		for i := range sinks {
			sinks[i].Secret = ""
		}
		recent, err = a.Recent(ctx, 20)
		return err
	})
	return sinks, recent, err
}

// AlertRemove deletes a sink.
func AlertRemove(ctx context.Context, dataDir, storeDSN, name string) error {
	return withAlerts(ctx, dataDir, storeDSN, func(a store.Alerts) error {
		if err := a.RemoveSink(ctx, name); errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("no alert sink named %s", name)
		} else if err != nil {
			return err
		}
		return nil
	})
}

// AlertTest posts a test alert to one sink, once, and says how it went.
func AlertTest(ctx context.Context, dataDir, storeDSN, name string) error {
	return withAlerts(ctx, dataDir, storeDSN, func(a store.Alerts) error {
		sinks, err := a.Sinks(ctx)
		if err != nil {
			return err
		}
		for _, s := range sinks {
			if s.Name == name {
				now := time.Now()
				return alerts.Post(ctx, &http.Client{}, s, alerts.Alert{Kind: alerts.KindTest, At: now,
					Message: "a test alert from meridian: this sink works"}, now)
			}
		}
		return fmt.Errorf("no alert sink named %s", name)
	})
}

// budgetAlerts raises the alert of a key's budget crossing.
func budgetAlerts(n *alerts.Notifier) func(apikeys.BudgetCrossing) {
	return func(c apikeys.BudgetCrossing) {
		n.Raise(alerts.Budget(c.Key, c.Spent, c.Mark, c.Budget, c.Per, c.Ends, c.Hard, time.Now()))
	}
}

func withAlerts(ctx context.Context, dataDir, storeDSN string, f func(store.Alerts) error) error {
	st, err := openStores(ctx, Config{DataDir: dataDir, Store: storeDSN}, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	defer st.close()
	return f(st.shared.Alerts)
}
