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

func TestScale(t *testing.T) {
	base := time.Second
	if raceEnabled {
		base = 3 * time.Second
	}
	t.Setenv(ScaleEnv, "")
	if got := Scale(time.Second); got != base {
		t.Fatalf("Scale(1s) = %v by default, want %v", got, base)
	}
	t.Setenv(ScaleEnv, "2.5")
	if got := Scale(2 * time.Second); got != 5*time.Second {
		t.Fatalf("Scale(2s) at 2.5 = %v", got)
	}
	for _, v := range []string{"0.5", "nonsense", "-3"} {
		t.Setenv(ScaleEnv, v)
		if got := Scale(time.Second); got != base {
			t.Fatalf("Scale(1s) at %q = %v, want the default %v", v, got, base)
		}
	}
}
