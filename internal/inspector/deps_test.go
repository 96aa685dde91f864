package inspector

import (
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// The inspector keeps captures through the store's contract, never an
// engine (its tests open one).
func TestImportsFlowDownward(t *testing.T) {
	testkit.CheckImports(t, "internal/capture", "internal/store", "internal/telemetry")
}
