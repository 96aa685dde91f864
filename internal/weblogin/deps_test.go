package weblogin

import (
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// A login is a process in a pseudo-terminal: no other Meridian package.
func TestImportsFlowDownward(t *testing.T) {
	testkit.CheckImports(t, "github.com/creack/pty")
}
