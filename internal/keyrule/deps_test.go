package keyrule

import (
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// This package is a pure core: no I/O, and nothing of Meridian's.
func TestImportsArePure(t *testing.T) { testkit.CheckPure(t) }
