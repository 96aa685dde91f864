// Package tracing puts Meridian's work into the operator's OpenTelemetry
// traces: one trace per model request, from the HTTP request through the
// key check, the dispatch, the hop to the host that holds the
// conversation and the turn, to the CLI's own turn, with the GenAI
// semantic conventions' attributes for the model, the tokens and the
// finish reason. A span starts under the one its context carries, with
// that span's provider: with tracing off there is none, and every call
// here is a no-op that allocates nothing. Spans carry no message content.
package tracing

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// scope names the instrumentation in every span.
const scope = "github.com/meridian-gw/meridian"

// Provider makes the tracers of a trace: nil where nothing is traced.
type Provider = trace.TracerProvider

// Span is a span being recorded (or a no-op one).
type Span = trace.Span

// Kinds of span, as the callers name them.
const (
	Internal = trace.SpanKindInternal
	Client   = trace.SpanKindClient
)

// Attr is a string attribute of a span.
func Attr(key, value string) attribute.KeyValue { return attribute.String(key, value) }

// Start starts a span named name under the span ctx carries.
func Start(ctx context.Context, name string, kind trace.SpanKind, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, parent
	}
	return parent.TracerProvider().Tracer(scope).Start(ctx, name, trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
}

// Server starts a request's server span with tp: under the W3C
// traceparent the request carries (a client's, or the host that
// forwarded it), else as a new trace. A nil tp records nothing.
func Server(ctx context.Context, tp Provider, r *http.Request, route string) (context.Context, trace.Span) {
	if tp == nil {
		return ctx, trace.SpanFromContext(ctx)
	}
	ctx = propagation.TraceContext{}.Extract(ctx, propagation.HeaderCarrier(r.Header))
	return tp.Tracer(scope).Start(ctx, r.Method+" "+route, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("http.request.method", r.Method), attribute.String("url.path", r.URL.Path),
			attribute.String("http.route", route), attribute.String("user_agent.original", r.UserAgent())))
}

// Inject writes the W3C traceparent of the span ctx carries into h, for
// a request another host answers as part of this trace.
func Inject(ctx context.Context, h http.Header) {
	if trace.SpanFromContext(ctx).SpanContext().IsValid() {
		propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(h))
	}
}

// Status ends an HTTP span's story: its status code, and an error status
// from 500 on (the semantic conventions leave 4xx unset on a server).
func Status(span trace.Span, code int) {
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(attribute.Int("http.response.status_code", code))
	if code >= 500 || code == 0 {
		span.SetStatus(codes.Error, "")
	}
}

// Fail marks a span failed with err.
func Fail(span trace.Span, err error) {
	if err != nil && span.IsRecording() {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
}

// Request sets the GenAI request attributes: what was asked of which provider.
func Request(span trace.Span, provider, model string, maxTokens int) {
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(attribute.String("gen_ai.operation.name", "chat"), attribute.String("gen_ai.provider.name", provider),
		attribute.String("gen_ai.request.model", model))
	if maxTokens > 0 {
		span.SetAttributes(attribute.Int("gen_ai.request.max_tokens", maxTokens))
	}
}

// Usage is what an answer used, as the GenAI conventions count it: input
// tokens include those read from and written to the cache.
type Usage struct {
	Input, Output, CacheRead, CacheWrite int64
}

// Response sets the GenAI response attributes: the model that answered,
// the tokens and, when known, why the answer finished.
func Response(span trace.Span, model string, u Usage, finish string) {
	if !span.IsRecording() {
		return
	}
	attrs := []attribute.KeyValue{
		attribute.Int64("gen_ai.usage.input_tokens", u.Input+u.CacheRead+u.CacheWrite),
		attribute.Int64("gen_ai.usage.output_tokens", u.Output),
		attribute.Int64("gen_ai.usage.cache_read.input_tokens", u.CacheRead),
		attribute.Int64("gen_ai.usage.cache_creation.input_tokens", u.CacheWrite),
	}
	if model != "" {
		attrs = append(attrs, attribute.String("gen_ai.response.model", model))
	}
	if finish != "" {
		attrs = append(attrs, attribute.StringSlice("gen_ai.response.finish_reasons", []string{finish}))
	}
	span.SetAttributes(attrs...)
}

// ProviderName names a CLI's vendor as the GenAI conventions do.
func ProviderName(cli string) string {
	switch cli {
	case "claude":
		return "anthropic"
	case "agy":
		return "gcp.gemini"
	}
	return cli
}
