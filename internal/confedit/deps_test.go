package confedit

import (
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// A pure core: text in, text out, and TOML decoding to check it.
func TestImportsFlowDownward(t *testing.T) {
	testkit.CheckImports(t, "github.com/pelletier/go-toml/v2")
}
