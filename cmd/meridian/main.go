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
	// The first SIGINT or SIGTERM drains the gateway; a second one ends
	// the drain at once.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	ctx, stop := context.WithCancel(context.Background())
	hurry := make(chan struct{})
	go func() {
		<-sigs
		stop()
		<-sigs
		close(hurry)
	}()
	err := newRootCommand(os.Environ(), hurry).ExecuteContext(ctx)
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
