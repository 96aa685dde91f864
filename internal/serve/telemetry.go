package serve

import (
	"context"
	"database/sql"
	"log/slog"

	"github.com/meridian-gw/meridian/internal/cluster"
	"github.com/meridian-gw/meridian/internal/config"
	"github.com/meridian-gw/meridian/internal/gateway"
	"github.com/meridian-gw/meridian/internal/metrics"
	"github.com/meridian-gw/meridian/internal/pricing"
	"github.com/meridian-gw/meridian/internal/spawn/registry"
	"github.com/meridian-gw/meridian/internal/store"
	"github.com/meridian-gw/meridian/internal/telemetry/history"
)

// telemetryParts are what the telemetry pages and /metrics read.
type telemetryParts struct {
	history *history.History
	metrics *metrics.Metrics
	prices  *pricing.Table
}

// openTelemetry starts the request history in the shared store, prices
// from the builtin table with the config file's overrides, and the
// metrics whose gauges read the gateway, the spawn registry in the local
// file and the hosts sharing the store.
func openTelemetry(db *store.Store, local *sql.DB, hosts *cluster.Registry, host string, cfg Config, settings config.Config,
	gws func() []*gateway.Gateway, log *slog.Logger) (*telemetryParts, error) {
	prices, err := pricing.New(settings.Pricing)
	if err != nil {
		return nil, err
	}
	hist := history.Open(db.Telemetry, host, history.Limits{MaxAge: cfg.TelemetryMaxAge, MaxRows: cfg.TelemetryMaxRows},
		log.With("component", "telemetry"), nil)
	spawns := registry.New(local)
	m := metrics.New(func(ctx context.Context) metrics.Load {
		b := gateway.SumLoad(gws())
		counts, err := spawns.CountByStatus(ctx)
		if err != nil {
			log.Debug("metrics: could not count spawns", "err", err)
		}
		l := metrics.Load{Running: b.Running, Queued: b.Queued, Slots: b.Slots, Live: b.Live, Idle: b.Idle,
			Spares: b.Spares, IdleMemory: b.IdleMemory, Memory: b.Memory, SpawnsByStatus: counts, TelemetryRecordsDropped: hist.Dropped()}
		byHost, err := hist.ByHost(ctx)
		if err != nil {
			log.Debug("metrics: could not count the requests by host", "err", err)
		}
		for _, h := range byHost {
			l.HostRequests = append(l.HostRequests, metrics.HostRequests{Host: h.Host, API: h.API, Status: h.Status, Count: h.Count})
		}
		if live, err := hosts.Hosts(ctx); err == nil {
			l.Hosts = len(live)
		}
		return l
	})
	return &telemetryParts{history: hist, metrics: m, prices: prices}, nil
}
