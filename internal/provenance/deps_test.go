package provenance

import (
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// This package is a pure core: no I/O, and no package of the module's.
func TestImportsArePure(t *testing.T) { testkit.CheckPure(t) }
