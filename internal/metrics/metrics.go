// Package metrics exposes Meridian's figures in the Prometheus exposition
// format: counters and histograms fed by each request's telemetry record,
// and gauges read from the gateway and the spawn registry when scraped.
// Each Metrics has its own registry; nothing is global.
package metrics

import (
	"cmp"
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/meridian-gw/meridian/internal/telemetry"
)

// Load is what the gauges read at each scrape.
type Load struct {
	Running, Queued, Slots  int
	Live, Idle, Spares      int
	IdleMemory              int64
	Memory                  int64
	SpawnsByStatus          map[string]int
	TelemetryRecordsDropped int64
	// HostRequests are the records the shared history keeps, by the host
	// that served them: every host's, read from the store. Hosts counts
	// the hosts sharing the store whose heartbeat is current.
	HostRequests []HostRequests
	Hosts        int
}

// HostRequests counts one host's kept records of one API and status.
type HostRequests struct {
	Host, API string
	Status    int
	Count     int64
}

// Metrics holds the registry and its collectors.
type Metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	ttft     *prometheus.HistogramVec
	queue    prometheus.Histogram
	tokens   *prometheus.CounterVec
	cost     *prometheus.CounterVec
}

// Latency buckets: a live turn takes tens of milliseconds, a cold start
// about a second, a long answer minutes.
var latencyBuckets = []float64{0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}

// New returns metrics whose gauges read load at each scrape (load may be
// nil: no gauges then).
func New(load func(context.Context) Load) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	labels := []string{"api", "client", "model", "status"}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "meridian_requests_total", Help: "Model requests answered, by API, client, model that answered, HTTP status and API key (its name; none for the admin key or no key).",
	}, append(labels, "key"))
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "meridian_request_duration_seconds", Help: "Time from a model request's arrival to its last byte.", Buckets: latencyBuckets,
	}, labels)
	m.ttft = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "meridian_time_to_first_token_seconds", Help: "Time from a model request's arrival to the first content sent.", Buckets: latencyBuckets,
	}, []string{"api", "client", "model"})
	m.queue = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "meridian_admission_wait_seconds", Help: "Time model requests waited for a claude process slot.",
		Buckets: []float64{0.001, 0.01, 0.1, 1, 5, 10, 30},
	})
	m.tokens = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "meridian_tokens_total", Help: "Tokens of answered requests, by kind (input, output, cache_read, cache_write), model and API key name.",
	}, []string{"kind", "model", "key"})
	m.cost = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "meridian_api_equivalent_cost_dollars_total", Help: "Estimated cost of the tokens at API list prices (an estimate; subscriptions are not billed so), by model and API key name.",
	}, []string{"model", "key"})
	m.reg.MustRegister(m.requests, m.duration, m.ttft, m.queue, m.tokens, m.cost,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if load != nil {
		m.reg.MustRegister(&loadCollector{load: load})
	}
	return m
}

// Observe counts one finished request.
func (m *Metrics) Observe(r telemetry.Record) {
	model := cmp.Or(r.Effective, "none")
	client := cmp.Or(r.Client, "unknown")
	status := strconv.Itoa(r.Status)
	key := cmp.Or(r.Key, "none")
	m.requests.WithLabelValues(r.API, client, model, status, key).Inc()
	m.duration.WithLabelValues(r.API, client, model, status).Observe(r.Total.Seconds())
	if r.TTFT > 0 {
		m.ttft.WithLabelValues(r.API, client, model).Observe(r.TTFT.Seconds())
	}
	if !r.Replay {
		m.queue.Observe(r.QueueWait.Seconds())
	}
	for _, k := range [...]struct {
		kind string
		n    int64
	}{{"input", r.Tokens.Input}, {"output", r.Tokens.Output}, {"cache_read", r.Tokens.CacheRead}, {"cache_write", r.Tokens.CacheWrite}} {
		if k.n > 0 {
			m.tokens.WithLabelValues(k.kind, model, key).Add(float64(k.n))
		}
	}
	if r.Cost > 0 {
		m.cost.WithLabelValues(model, key).Add(r.Cost)
	}
}

// Handler serves the exposition.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// Registry is the registry, for tests that gather directly.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// loadCollector reads the gauges when scraped.
type loadCollector struct {
	load func(context.Context) Load
}

var (
	descProcesses = prometheus.NewDesc("meridian_claude_processes", "claude processes by state: busy (running a turn or holding client tool calls), idle, spare (started ahead of need).", []string{"state"}, nil)
	descIdleMem   = prometheus.NewDesc("meridian_claude_idle_memory_bytes", "Memory (PSS) the idle claude processes and spares hold, as measured when each became idle.", nil, nil)
	descMem       = prometheus.NewDesc("meridian_claude_memory_bytes", "Memory (PSS: shared pages divided among their users) that all live claude processes hold, busy and idle, measured at the scrape.", nil, nil)
	descRunning   = prometheus.NewDesc("meridian_admission_running", "Turns holding a claude process slot.", nil, nil)
	descQueued    = prometheus.NewDesc("meridian_admission_queued", "Requests waiting for a claude process slot.", nil, nil)
	descSlots     = prometheus.NewDesc("meridian_admission_slots", "claude process slots (--max-concurrent).", nil, nil)
	descSpawns    = prometheus.NewDesc("meridian_spawns", "Spawned child agents by status.", []string{"status"}, nil)
	descDropped   = prometheus.NewDesc("meridian_telemetry_records_dropped_total", "Telemetry records dropped because the writer fell behind or the store refused them.", nil, nil)
	descHostReqs  = prometheus.NewDesc("meridian_host_requests", "Requests the shared telemetry history keeps, by the host that served them (every host on the store), API and status.", []string{"host", "api", "status"}, nil)
	descHosts     = prometheus.NewDesc("meridian_hosts", "Meridians sharing the store whose heartbeat is current.", nil, nil)
)

func (c *loadCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descProcesses, descIdleMem, descMem, descRunning, descQueued, descSlots, descSpawns, descDropped, descHostReqs, descHosts} {
		ch <- d
	}
}

func (c *loadCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	l := c.load(ctx)
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	gauge(descProcesses, float64(l.Live-l.Idle), "busy")
	gauge(descProcesses, float64(l.Idle-l.Spares), "idle")
	gauge(descProcesses, float64(l.Spares), "spare")
	gauge(descIdleMem, float64(l.IdleMemory))
	gauge(descMem, float64(l.Memory))
	gauge(descRunning, float64(l.Running))
	gauge(descQueued, float64(l.Queued))
	gauge(descSlots, float64(l.Slots))
	for status, n := range l.SpawnsByStatus {
		gauge(descSpawns, float64(n), status)
	}
	ch <- prometheus.MustNewConstMetric(descDropped, prometheus.CounterValue, float64(l.TelemetryRecordsDropped))
	for _, h := range l.HostRequests {
		gauge(descHostReqs, float64(h.Count), h.Host, h.API, strconv.Itoa(h.Status))
	}
	if l.Hosts > 0 {
		gauge(descHosts, float64(l.Hosts))
	}
}
