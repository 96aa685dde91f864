package main

import (
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// Started in a terminal, meridian says where it listens and what to do
// next, and logs lines a person reads (time, level, message first);
// through a pipe its log stays logfmt (every other test reads that).
func TestTheFirstScreenInATerminal(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(buildBinary(t), "--port", "0", "--data-dir", t.TempDir(), "--claude-path", testkit.ClaudePath(t), "--spares", "0")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir(), "TERM=xterm"}
	term := testkit.StartPty(t, cmd)
	err := term.WaitFor(30*time.Second, "Stop it:")
	_ = cmd.Process.Signal(syscall.SIGTERM)
	_ = cmd.Wait()
	got := term.Shown()
	if err != nil {
		t.Fatalf("%v:\n%s", err, got)
	}
	for _, want := range []string{"Meridian is serving the Anthropic and OpenAI APIs at http://127.0.0.1:", "meridian setup CLIENT  (claude-code, opencode", "INFO  meridian listening  "} {
		if !strings.Contains(got, want) {
			t.Errorf("the terminal lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "level=INFO") {
		t.Errorf("logfmt on a terminal:\n%s", got)
	}
}
