// Package otlp starts the OpenTelemetry SDK that sends Meridian's traces
// to an OTLP/HTTP endpoint: --otlp-endpoint, or the standard
// OTEL_EXPORTER_OTLP_ENDPOINT and OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
// (with the rest of the OTEL_EXPORTER_OTLP_* settings the exporter reads).
// Spans are batched and sent in the background; a collector that does
// not answer costs dropped spans, never a request's time.
package otlp

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Config is where traces go and what names the process sending them.
type Config struct {
	// Endpoint is the collector's base URL ("http://127.0.0.1:4318":
	// traces go to its /v1/traces), or a URL with a path, used as it is.
	// Empty: the environment's, if any.
	Endpoint string
	// Env is the process environment, read for OTEL_EXPORTER_OTLP_*.
	Env     map[string]string
	Version string
	Host    string
}

// Enabled says whether traces are sent at all.
func (c Config) Enabled() bool {
	return c.Endpoint != "" || c.Env["OTEL_EXPORTER_OTLP_ENDPOINT"] != "" || c.Env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] != ""
}

// Open starts the SDK; shutdown sends what waits and stops it. Without
// an endpoint it returns a nil provider: nothing is traced.
func Open(ctx context.Context, c Config) (tp trace.TracerProvider, shutdown func(context.Context) error, err error) {
	if !c.Enabled() {
		return nil, func(context.Context) error { return nil }, nil
	}
	var opts []otlptracehttp.Option
	if c.Endpoint != "" {
		u, err := url.Parse(c.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, nil, fmt.Errorf("--otlp-endpoint %q: want an http:// or https:// URL", c.Endpoint)
		}
		if strings.Trim(u.Path, "/") == "" {
			u.Path = "/v1/traces"
		}
		opts = append(opts, otlptracehttp.WithEndpointURL(u.String()))
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("the OTLP exporter: %w", err)
	}
	attrs := []attribute.KeyValue{attribute.String("service.version", c.Version), attribute.String("host.name", c.Host)}
	if c.Env["OTEL_SERVICE_NAME"] == "" {
		attrs = append(attrs, attribute.String("service.name", "meridian"))
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(attrs...))
	if err != nil {
		return nil, nil, fmt.Errorf("the trace resource: %w", err)
	}
	p := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return p, p.Shutdown, nil
}
