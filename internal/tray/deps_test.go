package tray

import (
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// The icon shows a glance through the tray library and nothing else.
func TestImportsFlowDownward(t *testing.T) {
	testkit.CheckImports(t, "fyne.io/systray", "internal/glance")
}
