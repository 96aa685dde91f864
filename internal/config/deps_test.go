package config

import (
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// The settings file knows its own keys and the price table's shape.
func TestImportsFlowDownward(t *testing.T) {
	testkit.CheckImports(t,
		"internal/pricing",
		"github.com/pelletier/go-toml/v2",
	)
}
