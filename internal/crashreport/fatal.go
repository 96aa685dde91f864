package crashreport

import (
	"bytes"
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"time"
)

// A panic outside a handler, or a fatal runtime error, ends the process
// before anything can send it. Its crash output is kept in a file of the
// data dir (runtime/debug.SetCrashOutput) and reported at the next start,
// under the same rules: the runtime's own message for a runtime error or
// a fatal error, the frames by package, nothing else of the panic value.

// WatchFatal reports what the last run's crash left in path, if anything,
// and sends this run's crash output there.
func (r *Reporter) WatchFatal(path string) error {
	if r == nil {
		return nil
	}
	if b, err := os.ReadFile(path); err == nil && len(bytes.TrimSpace(b)) > 0 {
		typ, value, stack := parseCrash(b)
		fs := frames(stack)
		r.mu.Lock()
		r.last = time.Now()
		r.mu.Unlock()
		r.wg.Go(func() { r.send(typ, value, fs, time.Now()) })
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("crash output: %w", err)
	}
	defer f.Close() // the runtime keeps its own copy of the descriptor
	if err := debug.SetCrashOutput(f, debug.CrashOptions{}); err != nil {
		return fmt.Errorf("crash output: %w", err)
	}
	return nil
}

// parseCrash reads a crash's output: what it was, and the crashing
// goroutine's stack (in debug.Stack's form).
func parseCrash(out []byte) (typ, value string, stack []byte) {
	typ, value = "fatal panic", "a panic whose value is not reported (it may hold request data)"
	lines := strings.Split(string(out), "\n")
	for i, line := range lines {
		switch {
		case strings.HasPrefix(line, "panic: ") && runtimeMessage(strings.TrimPrefix(line, "panic: ")), strings.HasPrefix(line, "fatal error: "):
			msg := strings.TrimPrefix(strings.TrimPrefix(line, "panic: "), "fatal error: ")
			msg, _, _ = strings.Cut(msg, " [recovered]")
			typ, value = "runtime.Error", msg
			if strings.HasPrefix(line, "fatal error: ") {
				typ = "fatal error"
			}
		case strings.HasPrefix(line, "goroutine ") && stack == nil:
			end := len(lines)
			for j := i + 1; j < len(lines); j++ {
				if strings.TrimSpace(lines[j]) == "" {
					end = j
					break
				}
			}
			stack = []byte(strings.Join(lines[i:end], "\n"))
		}
	}
	return typ, value, stack
}

// runtimeMessage reports a panic message the runtime itself writes (a
// crash's output prints every panic value alike, so the runtime's are
// known by their words): only those are reported.
func runtimeMessage(msg string) bool {
	for _, prefix := range []string{"runtime error: ", "assignment to entry in nil map", "close of closed channel",
		"close of nil channel", "send on closed channel", "all goroutines are asleep"} {
		if strings.HasPrefix(msg, prefix) {
			return true
		}
	}
	return false
}
