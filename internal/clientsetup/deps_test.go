package clientsetup

import (
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// Setup edits through the pure editor and writes through atomicfile; it
// knows nothing of the gateway.
func TestImportsFlowDownward(t *testing.T) {
	testkit.CheckImports(t, "internal/confedit", "internal/atomicfile", "internal/suggest")
}
