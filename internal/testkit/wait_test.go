package testkit

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestWaitFor(t *testing.T) {
	n := 0
	if err := WaitFor(time.Second, func() error {
		if n++; n < 3 {
			return errors.New("not yet")
		}
		return nil
	}); err != nil || n != 3 {
		t.Fatalf("WaitFor = %v after %d tries", err, n)
	}
	err := WaitFor(20*time.Millisecond, func() error { return errors.New("never") })
	if err == nil || !strings.Contains(err.Error(), "never") {
		t.Fatalf("WaitFor on a condition that never holds = %v", err)
	}
}
