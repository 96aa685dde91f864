package openai

import (
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// The translation core stays pure: protocol packages and schema checks
// only. Sealing uses the standard library's ciphers and randomness.
func TestImportsArePure(t *testing.T) {
	testkit.CheckPure(t, "internal/anthropic", "internal/jsonbody", "internal/schemacheck")
}
