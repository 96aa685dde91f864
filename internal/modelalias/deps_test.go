package modelalias

import (
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// Aliases reach the store's contract only, never an engine.
func TestImportsFlowDownward(t *testing.T) {
	testkit.CheckImports(t, "internal/store")
}
