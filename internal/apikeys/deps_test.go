package apikeys

import (
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// The key commands reach the store's contract and the pure key rules,
// never an engine (its tests open one).
func TestImportsFlowDownward(t *testing.T) {
	testkit.CheckImports(t, "internal/capture", "internal/keyrule", "internal/store")
}
