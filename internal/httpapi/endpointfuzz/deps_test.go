package endpointfuzz_test

import (
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

func TestImportsNothing(t *testing.T) { testkit.CheckImports(t) }
