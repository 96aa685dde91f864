package e2e

import (
	"fmt"
	"os"
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// meridianBin is the binary every test runs, built once by TestMain.
var meridianBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "meridian-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	meridianBin, err = testkit.BuildMeridianTo(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// buildBinary is the binary built for this run.
func buildBinary(testing.TB) string { return meridianBin }

// Dependencies flow downward: the system tests' package holds nothing
// but this note outside its tests.
func TestImportsFlowDownward(t *testing.T) { testkit.CheckImports(t) }
