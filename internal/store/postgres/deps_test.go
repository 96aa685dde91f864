package postgres

import (
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// Dependencies flow downward: this package imports only what it owns
// beyond the standard library.
func TestImportsFlowDownward(t *testing.T) {
	testkit.CheckImports(t, "github.com/jackc/pgx/v5", "github.com/jackc/pgx/v5/pgxpool", "github.com/jackc/pgx/v5/stdlib", "internal/store", "internal/store/sqlstore")
}
