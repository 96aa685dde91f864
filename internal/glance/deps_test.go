package glance

import (
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// Pure: it reads readings and makes events of the notice policy.
func TestImportsFlowDownward(t *testing.T) {
	testkit.CheckPure(t, "internal/notice")
}
