package testkit

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

// ScaleEnv names the factor every test bound on the machine is stretched
// by: a loaded machine, or the race detector, makes the same work slower,
// and a bound a test waits within is a bound on the machine, never the
// property under test.
const ScaleEnv = "MERIDIAN_TEST_SCALE"

// Scale stretches d, a test's bound on how long the machine may take, by
// MERIDIAN_TEST_SCALE (a number ≥ 1; by default 1, and 3 under the race
// detector). Bounds that decide behaviour inside one process belong on
// testing/synctest's clock instead; short waits that check that nothing
// happens are not scaled.
func Scale(d time.Duration) time.Duration {
	f := 1.0
	if raceEnabled {
		f = 3
	}
	if v, err := strconv.ParseFloat(os.Getenv(ScaleEnv), 64); err == nil && v >= 1 {
		f = v
	}
	return time.Duration(float64(d) * f)
}

// WaitFor calls try until it returns nil, or until within (scaled by
// Scale) has passed and then returns try's last error. It is the one way
// tests wait for what other processes settle (a real CLI, a worker, the
// kernel); a test that waits on its own process's timers uses
// testing/synctest instead.
func WaitFor(within time.Duration, try func() error) error {
	within = Scale(within)
	deadline := time.Now().Add(within)
	pause := 5 * time.Millisecond
	for {
		err := try()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %v: %w", within, err)
		}
		time.Sleep(pause)
		pause = min(2*pause, 100*time.Millisecond)
	}
}
