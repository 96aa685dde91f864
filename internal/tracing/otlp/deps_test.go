package otlp

import (
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// The SDK's setup: the exporter, the resource and the provider, and no
// Meridian package.
func TestImportsFlowDownward(t *testing.T) {
	testkit.CheckImports(t, "go.opentelemetry.io/otel/attribute", "go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp",
		"go.opentelemetry.io/otel/sdk/resource", "go.opentelemetry.io/otel/sdk/trace", "go.opentelemetry.io/otel/trace")
}
