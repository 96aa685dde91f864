package dbusnotify

import (
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// The session bus only.
func TestImportsFlowDownward(t *testing.T) {
	testkit.CheckImports(t, "github.com/godbus/dbus/v5")
}
