package adapter

import (
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// The adapters know clients and lineage's types, nothing that does I/O.
func TestImportsFlowDownward(t *testing.T) {
	testkit.CheckImports(t,
		"internal/anthropic",
		"internal/lineage",
	)
}
