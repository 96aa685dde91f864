package e2e

import (
	"os"
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// meridianBin is the binary every test runs, built once by TestMain.
var meridianBin string

func TestMain(m *testing.M) { os.Exit(testkit.RunWithMeridian(m, &meridianBin)) }

// buildBinary is the binary built for this run.
func buildBinary(testing.TB) string { return meridianBin }

// Dependencies flow downward: the system tests' package holds nothing
// but this note outside its tests.
func TestImportsFlowDownward(t *testing.T) { testkit.CheckImports(t) }
