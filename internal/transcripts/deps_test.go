package transcripts

import (
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// Dependencies flow downward: this package imports nothing of the module.
func TestImportsFlowDownward(t *testing.T) { testkit.CheckImports(t) }
