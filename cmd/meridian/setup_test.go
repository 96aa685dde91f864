package main

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// setupCLI runs `meridian setup ARGS…` in process with env.
func setupCLI(t *testing.T, env []string, args ...string) (string, error) {
	t.Helper()
	root := newRootCommand(env, nil)
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(append([]string{"setup"}, args...))
	err := root.Execute()
	return out.String(), err
}

// closedPort is a loopback port nothing listens on.
func closedPort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return strconv.Itoa(port)
}

func TestSetupCommand(t *testing.T) {
	home := t.TempDir()
	port := closedPort(t)
	env := []string{"HOME=" + home, "MERIDIAN_DATA_DIR=" + filepath.Join(home, "data"), "MERIDIAN_API_KEY=s3cret-key", "MERIDIAN_PORT=" + port,
		"MERIDIAN_CLAUDE_PATH=" + filepath.Join(home, "no-claude")}
	config := filepath.Join(home, ".codex", "config.toml")
	profile := filepath.Join(home, ".codex", "meridian.config.toml")
	mine := "# mine\nmodel = \"o3\"\n"
	if err := os.MkdirAll(filepath.Dir(config), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(config, []byte(mine), 0o644); err != nil {
		t.Fatal(err)
	}

	out, err := setupCLI(t, env, "codex", "--dry-run")
	if err != nil || !strings.Contains(out, "+[model_providers.meridian]") || !strings.Contains(out, "model aliases (the CLI could not be asked): sonnet, opus, haiku") {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
	if now, _ := os.ReadFile(config); string(now) != mine {
		t.Fatal("--dry-run wrote the file")
	}
	out, err = setupCLI(t, env, "codex")
	if err != nil || !strings.Contains(out, "created "+profile) || !strings.Contains(out, "export MERIDIAN_API_KEY") {
		t.Fatalf("setup: %v\n%s", err, out)
	}
	if now, _ := os.ReadFile(config); string(now) != mine {
		t.Fatalf("setup without --set-default changed config.toml:\n%s", now)
	}
	written, _ := os.ReadFile(profile)
	if !strings.Contains(string(written), `env_key = "MERIDIAN_API_KEY"`) || !strings.Contains(string(written), "127.0.0.1:"+port+"/v1") {
		t.Fatalf("config:\n%s", written)
	}
	if strings.Contains(string(written), "s3cret") || strings.Contains(out, "s3cret") {
		t.Fatal("the key's value was written or printed")
	}
	if out, err = setupCLI(t, env, "codex"); err != nil || !strings.Contains(out, "nothing to change") {
		t.Fatalf("second run: %v\n%s", err, out)
	}
	if out, err = setupCLI(t, env, "--undo", "codex"); err != nil || !strings.Contains(out, "restored "+profile) {
		t.Fatalf("undo: %v\n%s", err, out)
	}
	if _, err := os.Stat(profile); !os.IsNotExist(err) {
		t.Fatalf("undo left the profile it created: %v", err)
	}

	if _, err = setupCLI(t, env, "nonesuch"); err == nil || !strings.Contains(err.Error(), "setup knows claude-code, opencode") {
		t.Fatalf("unknown client: %v", err)
	}
	if _, err = setupCLI(t, env, "env"); err == nil || !strings.Contains(err.Error(), "--print") {
		t.Fatalf("env without --print: %v", err)
	}
	out, err = setupCLI(t, env, "env", "--print")
	if err != nil || !strings.Contains(out, "export OPENAI_BASE_URL=http://127.0.0.1:"+port+"/v1") || !strings.Contains(out, `ANTHROPIC_API_KEY="$MERIDIAN_API_KEY"`) {
		t.Fatalf("env --print: %v\n%s", err, out)
	}
}

// With no Meridian running, setup offers the models the CLI itself lists.
func TestSetupOffersTheCLIsOwnModels(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	env := []string{"HOME=" + home, "MERIDIAN_DATA_DIR=" + filepath.Join(home, "data"), "MERIDIAN_PORT=" + closedPort(t),
		"MERIDIAN_CLAUDE_PATH=" + testkit.ClaudePath(t), "CLAUDE_CONFIG_DIR=" + filepath.Join(home, "claude"),
		"ANTHROPIC_API_KEY=unused", "ANTHROPIC_BASE_URL=http://127.0.0.1:" + closedPort(t), "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"}
	out, err := setupCLI(t, env, "pi", "--dry-run")
	if err != nil || !strings.Contains(out, "the claude CLI's own model list: ") || strings.Contains(out, "could not be asked") {
		t.Fatalf("setup pi --dry-run: %v\n%s", err, out)
	}
	if !strings.Contains(out, `"id": "sonnet"`) {
		t.Fatalf("the CLI's models are not offered:\n%s", out)
	}
}
