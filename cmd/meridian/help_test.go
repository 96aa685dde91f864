package main

import (
	"bytes"
	"strings"
	"testing"
)

// runRoot runs the command line in process and returns what it printed
// and its error. No claude is found: `meridian claude` would replace the
// test process with it.
func runRoot(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newRootCommand([]string{"HOME=" + t.TempDir(), "MERIDIAN_CLAUDE_PATH=" + t.TempDir() + "/no-claude"}, nil)
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

// The help reads as gh's and kubectl's do: commands and what they are
// for first, flags where they belong, booleans as --flag, examples, and
// a suggestion for a near miss.
func TestHelpForPeople(t *testing.T) {
	root, err := runRoot(t, "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"OpenAI Chat Completions and Responses APIs", "Run the gateway:\n  serve", "Point clients at it", "  setup ", "--version"} {
		if !strings.Contains(root, want) {
			t.Errorf("root help lacks %q:\n%s", want, root)
		}
	}
	for _, unwanted := range []string{"--max-live", "--directory", "[=true|false]"} {
		if strings.Contains(root, unwanted) {
			t.Errorf("root help shows %q:\n%s", unwanted, root)
		}
	}
	if i, j := strings.Index(root, "serve "), strings.Index(root, "Flags:"); i < 0 || j < i {
		t.Errorf("the commands do not come before the flags:\n%s", root)
	}

	serve, _ := runRoot(t, "serve", "--help")
	if !strings.Contains(serve, "      --failover  ") || strings.Contains(serve, "[=true|false]") || strings.Contains(serve, "--directory") || !strings.Contains(serve, "--admin-key") {
		t.Errorf("serve help:\n%s", serve)
	}
	for _, cmd := range [][]string{{"serve"}, {"key"}, {"profile"}, {"service"}, {"spawn"}, {"setup"}} {
		if out, _ := runRoot(t, append(cmd, "--help")...); !strings.Contains(out, "Examples:\n") {
			t.Errorf("%s --help has no examples", cmd[0])
		}
	}
	if out, _ := runRoot(t, "spawn", "list", "--help"); !strings.Contains(out, "-C, --directory DIR") {
		t.Errorf("spawn's commands do not show -C:\n%s", out)
	}
	if _, err := runRoot(t, "-C", t.TempDir(), "status"); err == nil || !strings.Contains(err.Error(), "spawn commands only") {
		t.Errorf("-C before a command that is not spawn's: %v", err)
	}

	if out, err := runRoot(t, "--version"); err != nil || !strings.HasPrefix(out, "meridian ") {
		t.Errorf("--version: %v %q", err, out)
	}
	if _, err := runRoot(t, "sevre"); err == nil || !strings.Contains(err.Error(), "Did you mean this?\n\tserve") {
		t.Errorf("a mistyped command: %v", err)
	}
	if out, err := runRoot(t, "setup"); err != nil || !strings.Contains(out, "claude-code  Claude Code") || !strings.Contains(out, "env ") {
		t.Errorf("setup with no client: %v\n%s", err, out)
	}
	if _, err := runRoot(t, "setup", "claude"); err == nil || !strings.Contains(err.Error(), "did you mean claude-code?") {
		t.Errorf("setup claude: %v", err)
	}
	if out, _ := runRoot(t, "claude", "--help"); !strings.Contains(out, "meridian claude: Run claude as a lead") {
		t.Errorf("meridian claude --help does not say what it does:\n%s", out)
	}
}
