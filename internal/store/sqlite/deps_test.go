package sqlite

import (
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// Dependencies flow downward: this package imports only what it owns
// beyond the standard library.
func TestImportsFlowDownward(t *testing.T) {
	testkit.CheckImports(t, "modernc.org/sqlite", "internal/store", "internal/store/sqlstore", "internal/filelock")
}
