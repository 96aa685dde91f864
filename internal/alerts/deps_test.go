package alerts

import (
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// Alerts know the store's contracts and nothing of dispatch or the
// gateway, which tell them what happened.
func TestImportsFlowDownward(t *testing.T) { testkit.CheckImports(t, "internal/store") }
