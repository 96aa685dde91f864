package serve

import (
	"context"
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
	err = withAlerts(ctx, dataDir, storeDSN, func(a store.Alerts) error {
		secret, err = alerts.AddSink(ctx, a, name, url, format, time.Now())
		return err
	})
	return secret, err
}

// AlertSinks lists the sinks (their secrets left out) and the latest
// alerts sent.
func AlertSinks(ctx context.Context, dataDir, storeDSN string) (sinks []store.AlertSink, recent []store.SentAlert, err error) {
	err = withAlerts(ctx, dataDir, storeDSN, func(a store.Alerts) error {
		sinks, recent, err = alerts.Sinks(ctx, a, 20)
		return err
	})
	return sinks, recent, err
}

// AlertRemove deletes a sink.
func AlertRemove(ctx context.Context, dataDir, storeDSN, name string) error {
	return withAlerts(ctx, dataDir, storeDSN, func(a store.Alerts) error { return alerts.RemoveSink(ctx, a, name) })
}

// AlertTest posts a test alert to one sink, once, and says how it went.
func AlertTest(ctx context.Context, dataDir, storeDSN, name string) error {
	return withAlerts(ctx, dataDir, storeDSN, func(a store.Alerts) error {
		return alerts.TestSink(ctx, a, &http.Client{}, name, time.Now())
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
