package schemacheck

import (
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// The schema library is configured never to fetch; nothing else is imported.
func TestImportsArePure(t *testing.T) {
	testkit.CheckPure(t, "github.com/santhosh-tekuri/jsonschema/v6")
}
