package pricing

import (
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// Pure: the table and the arithmetic, no I/O.
func TestPure(t *testing.T) { testkit.CheckPure(t) }
