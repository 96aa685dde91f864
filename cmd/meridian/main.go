// Command meridian is a local gateway between coding agents and the claude
// CLI: it speaks the Anthropic Messages API and answers by driving the
// official CLI as a subprocess.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newRootCommand(os.Environ()).ExecuteContext(ctx)
	stop()
	var code exitCode
	switch {
	case errors.As(err, &code):
		os.Exit(int(code))
	case err != nil:
		fmt.Fprintln(os.Stderr, "meridian:", err)
		os.Exit(1)
	}
}
