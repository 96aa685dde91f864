package claude_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Every process the driver starts is joined, and with it every goroutine
// that read its pipes.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
