package httpapi_test

import (
	"testing"

	"go.uber.org/goleak"
)

// When all tests are done no goroutine of Meridian's may remain: every
// stream's pinger, every CLI reader and waiter is joined. Idle keep-alive
// connections of the test clients are not Meridian's.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
	)
}
