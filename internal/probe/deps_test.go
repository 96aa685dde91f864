package probe

import (
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// An HTTP client of Meridian's own routes: it imports nothing of Meridian.
func TestImportsFlowDownward(t *testing.T) { testkit.CheckImports(t) }
