package tracing

import (
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// Spans are started through the OpenTelemetry API alone: no Meridian
// package and no SDK (package otlp starts that), so the rest of
// Meridian knows OpenTelemetry only through this package.
func TestImportsFlowDownward(t *testing.T) {
	testkit.CheckImports(t, "go.opentelemetry.io/otel/attribute", "go.opentelemetry.io/otel/codes",
		"go.opentelemetry.io/otel/propagation", "go.opentelemetry.io/otel/trace")
}
