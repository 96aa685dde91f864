package notice

import (
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// The policy is pure: the standard library's data types only.
func TestImportsFlowDownward(t *testing.T) {
	testkit.CheckPure(t)
}
