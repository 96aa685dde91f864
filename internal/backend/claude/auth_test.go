package claude_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/meridian-gw/meridian/internal/backend/claude"
	"github.com/meridian-gw/meridian/internal/testkit"
)

// The login check sees what the gateway's sessions see: a token that
// `meridian setup claude-code` put in the user's settings.json for the
// client is not a login of the gateway's own.
func TestAuthIgnoresTheUsersSettingsFile(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	settings := `{"env": {"ANTHROPIC_BASE_URL": "http://127.0.0.1:3456", "ANTHROPIC_AUTH_TOKEN": "meridian"}}`
	if err := os.MkdirAll(filepath.Join(home, ".claude"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".claude", "settings.json"), []byte(settings), 0o600); err != nil {
		t.Fatal(err)
	}
	d := claude.New(claude.Config{Path: testkit.ClaudePath(t), Env: []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home}})
	a, err := d.Auth(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if a.LoggedIn || a.Method == "oauth_token" {
		t.Fatalf("the placeholder token in settings.json counts as a login: %+v", a)
	}
}
