package console

import (
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// The console changes records through their own packages and the store's
// contract, never an engine or the HTTP front.
func TestImportsFlowDownward(t *testing.T) {
	testkit.CheckImports(t, "internal/alerts", "internal/apikeys", "internal/modelalias", "internal/profile", "internal/store", "internal/weblogin")
}
