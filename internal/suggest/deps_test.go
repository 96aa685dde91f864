package suggest

import (
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// This package is a pure core: no I/O, and only the packages it is
// allowed.
func TestImportsArePure(t *testing.T) { testkit.CheckPure(t) }
