package codexschema

import (
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// Pure: the record and a validator, no I/O.
func TestImportsFlowDownward(t *testing.T) {
	testkit.CheckPure(t, "github.com/santhosh-tekuri/jsonschema/v6")
}
