package main

import (
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// Flags only: the window is package panelwindow's.
func TestImportsFlowDownward(t *testing.T) {
	testkit.CheckImports(t, "internal/panelwindow")
}
