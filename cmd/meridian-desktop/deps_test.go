package main

import (
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// Flags only: the companion is package desktop's.
func TestImportsFlowDownward(t *testing.T) {
	testkit.CheckImports(t, "github.com/spf13/cobra", "internal/clientsetup", "internal/dbusnotify", "internal/desktop",
		"internal/keeper", "internal/notice", "internal/tray")
}
