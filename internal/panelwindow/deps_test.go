package panelwindow

import (
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// The window knows no other package of Meridian's: it is given an origin
// and a cookie.
func TestImportsFlowDownward(t *testing.T) {
	testkit.CheckImports(t)
}
