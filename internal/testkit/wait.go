package testkit

import (
	"fmt"
	"time"
)

// WaitFor calls try until it returns nil, or until within has passed and
// then returns try's last error. It is the one way tests wait for what
// other processes settle (a real CLI, a worker, the kernel); a test that
// waits on its own process's timers uses testing/synctest instead.
func WaitFor(within time.Duration, try func() error) error {
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
