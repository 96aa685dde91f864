package hooks_test

import (
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

func TestImportsFlowDownward(t *testing.T) {
	testkit.CheckImports(t, "internal/backend/subproc", "github.com/tetratelabs/wazero",
		"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1", "github.com/tetratelabs/wazero/sys")
}
