package appserver

import (
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// The framing alone: no method, no other package of Meridian's.
func TestImportsFlowDownward(t *testing.T) {
	testkit.CheckImports(t)
}
