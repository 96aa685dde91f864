package registry

import (
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// The registry is spawns in SQL: their domain rules and nothing else.
func TestImportsFlowDownward(t *testing.T) {
	testkit.CheckImports(t,
		"internal/spawn",
	)
}
