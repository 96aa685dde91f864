package store

import (
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// The contracts are a pure core: no I/O, and no other package of this
// module.
func TestImportsArePure(t *testing.T) { testkit.CheckPure(t) }
