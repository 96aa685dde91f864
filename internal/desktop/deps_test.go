package desktop

import (
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// The companion reaches the gateway through look and its own changes
// over HTTP, never the gateway's packages; the toolkit's window is a
// process of its own, not an import.
func TestImportsFlowDownward(t *testing.T) {
	testkit.CheckImports(t, "internal/atomicfile", "internal/clientsetup", "internal/glance", "internal/keeper", "internal/look",
		"internal/notice", "internal/panelwindow", "internal/procgroup", "internal/tray")
}
