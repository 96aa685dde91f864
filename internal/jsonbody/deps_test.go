package jsonbody

import (
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

func TestImportsArePure(t *testing.T) { testkit.CheckPure(t) }
