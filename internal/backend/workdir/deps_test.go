package workdir_test

import (
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// The session folders know nothing of the gateway or any CLI.
func TestImportsFlowDownward(t *testing.T) {
	testkit.CheckImports(t)
}
