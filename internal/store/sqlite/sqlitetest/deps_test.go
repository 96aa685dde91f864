package sqlitetest

import (
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// It opens the engine and nothing else.
func TestImportsFlowDownward(t *testing.T) {
	testkit.CheckImports(t, "internal/store", "internal/store/sqlite", "internal/store/sqlstore")
}
