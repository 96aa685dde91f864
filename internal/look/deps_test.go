package look

import (
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// An HTTP client that hands what it read to the glance.
func TestImportsFlowDownward(t *testing.T) {
	testkit.CheckImports(t, "internal/glance")
}
