package capture

import (
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// The draft and the redaction are pure: no store, no transport.
func TestImportsFlowDownward(t *testing.T) {
	testkit.CheckImports(t, "internal/telemetry")
}
