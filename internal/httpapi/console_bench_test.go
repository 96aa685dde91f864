package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/capture"
	"github.com/meridian-gw/meridian/internal/testkit"
	"github.com/meridian-gw/meridian/internal/tracing/otlp"
)

// BenchmarkRelayTracing measures the Messages relay with each request
// traced (the OpenTelemetry SDK batching spans to an OTLP/HTTP collector
// on loopback that takes them) beside the same relay untraced,
// interleaved in one run, and reports what tracing adds at the median.
func BenchmarkRelayTracing(b *testing.B) {
	col := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.Copy(io.Discard, r.Body) }))
	defer col.Close()
	tp, shutdown, err := otlp.Open(context.Background(), otlp.Config{Endpoint: col.URL, Version: "bench", Host: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = shutdown(context.Background()) }()
	off := benchStack(b)
	on := newStack(b, stackOptions{claudePath: "in-process", launcher: testkit.NewInProcessCLI(benchChunks()), maxConcurrent: 256, tracer: tp})
	c := newBenchClient()
	latencies(b, c, off.URL, 50)
	latencies(b, c, on.URL, 50)
	b.ResetTimer()
	var offs, ons []time.Duration
	for i := 0; i < b.N; i++ {
		offs = append(offs, latencies(b, c, off.URL, 1)...)
		ons = append(ons, latencies(b, c, on.URL, 1)...)
	}
	b.StopTimer()
	m := medians(offs, ons)
	b.ReportMetric(ms(m[1]), "traced-p50-ms")
	b.ReportMetric(ms(m[0]), "untraced-p50-ms")
	b.ReportMetric(ms(m[1]-m[0]), "tracing-adds-p50-ms")
	b.ReportMetric(float64(m[1])/float64(m[0]), "x-untraced-p50")
}

// BenchmarkRelayCapture measures a Messages request of 100 KB with the
// request inspector capturing its content (the body, what the CLI was
// written, the answer; redacted and stored in SQLite off the request
// path) beside the same request with capture off, interleaved in one
// run, and reports what capture adds at the median.
func BenchmarkRelayCapture(b *testing.B) {
	text := strings.Repeat("The quick brown fox jumps over the lazy dog; a task-list item. ", 1700)[:100_000]
	body, _ := json.Marshal(map[string]any{"model": "bench-model", "max_tokens": 1024, "stream": true,
		"messages": []map[string]string{{"role": "user", "content": text}}})
	route := benchRoute{path: messagesRoute.path, body: string(body), end: messagesRoute.end}
	opts := func(mode string) stackOptions {
		return stackOptions{claudePath: "in-process", launcher: testkit.NewInProcessCLI(benchChunks()), maxConcurrent: 256,
			sessions: true, capture: mode}
	}
	off, on := newStack(b, opts(capture.Off)), newStack(b, opts(capture.Content))
	c := newBenchClient()
	routeLatencies(b, c, off.URL, route, 20)
	routeLatencies(b, c, on.URL, route, 20)
	b.ResetTimer()
	var offs, ons []time.Duration
	for i := 0; i < b.N; i++ {
		offs = append(offs, routeLatencies(b, c, off.URL, route, 1)...)
		ons = append(ons, routeLatencies(b, c, on.URL, route, 1)...)
	}
	b.StopTimer()
	m := medians(offs, ons)
	b.ReportMetric(ms(m[1]), "captured-p50-ms")
	b.ReportMetric(ms(m[0]), "off-p50-ms")
	b.ReportMetric(ms(m[1]-m[0]), "capture-adds-p50-ms")
	b.ReportMetric(float64(m[1])/float64(m[0]), "x-off-p50")
}
