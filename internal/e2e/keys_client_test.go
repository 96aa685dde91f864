package e2e

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// Once a key exists, Claude Code set up without one is refused at once,
// with the refusal's own words: the 401 says another try cannot fix it
// (X-Should-Retry: false), where Claude Code would otherwise try again
// for three minutes and then say only "Not logged in".
func TestClaudeCodeWithoutAKeyIsToldAtOnce(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	g.start("--spares", "0")
	g.addKey(t, "", "laptop")
	time.Sleep(1100 * time.Millisecond) // the gateway reads the keys again within a second

	home := t.TempDir()
	cmd := exec.Command(testkit.ClaudePath(t), "-p", "hi")
	cmd.Dir = home
	// As `meridian setup claude-code` leaves it without a key, and with
	// two retries allowed: a client that retried would send three.
	cmd.Env = []string{"HOME=" + home, "PATH=/usr/bin:/bin", "CLAUDE_CONFIG_DIR=" + filepath.Join(home, ".claude"),
		"ANTHROPIC_BASE_URL=" + g.url, "ANTHROPIC_AUTH_TOKEN=meridian", "CLAUDE_CODE_MAX_RETRIES=2",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1"}
	out, code := combined(t, cmd)
	if code == 0 || !strings.Contains(out, "meridian setup CLIENT --key") {
		t.Fatalf("claude -p without a key: exit %d\n%s", code, out)
	}
	refused := func() int {
		n := 0
		for _, line := range strings.Split(g.log.String(), "\n") {
			if strings.Contains(line, "path=/v1/messages") && strings.Contains(line, "status=401") {
				n++
			}
		}
		return n
	}
	waitTrue(t, 5*time.Second, "the refusal logged", func() bool { return refused() > 0 })
	if n := refused(); n != 1 {
		t.Fatalf("Claude Code sent the refused request %d times, want once", n)
	}
}
