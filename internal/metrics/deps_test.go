package metrics

import (
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// Dependencies flow downward: metrics reads telemetry records only.
func TestImportsFlowDownward(t *testing.T) {
	testkit.CheckImports(t, "internal/telemetry", "github.com/prometheus/client_golang/prometheus",
		"github.com/prometheus/client_golang/prometheus/collectors", "github.com/prometheus/client_golang/prometheus/promhttp")
}
