package clientsetup

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/meridian-gw/meridian/internal/confedit"
)

// existing is, per client, a config full of settings and comments that
// are none of Meridian's business, at its path under HOME.
var existing = map[string]struct{ path, text string }{
	"claude-code": {".claude/settings.json", `{
  // permissions I granted
  "permissions": { "allow": ["Bash(ls:*)"] },
  "env": {
    "DISABLE_TELEMETRY": "1"
  },
  "theme": "dark"
}
`},
	"opencode": {".config/opencode/opencode.jsonc", `{
  "$schema": "https://opencode.ai/config.json",
  /* my usual provider */
  "provider": {
    "ollama": { "npm": "@ai-sdk/openai-compatible", "options": { "baseURL": "http://localhost:11434/v1" } }, // local
  },
  "autoupdate": false,
}
`},
	"codex": {".codex/config.toml", `# codex settings
model = "o3"  # my default
approval_policy = "never"

[mcp_servers.docs]
command = "docs-mcp"
args = ["--port", "1"]

[profiles.fast]
model = "o4-mini"
`},
	"pi": {".pi/agent/models.json", `{
  "providers": {
    "ollama": { "baseUrl": "http://localhost:11434/v1", "api": "openai-completions", "apiKey": "ollama", "models": [{ "id": "llama" }] }
  }
}
`},
	"crush": {".config/crush/crush.json", `{
  "$schema": "https://charm.land/crush.json",
  "options": { "debug": false },
  "lsp": { "go": { "command": "gopls" } }
}
`},
	"droid": {".factory/settings.json", `{
  "customModels": [
    { "model": "llama", "displayName": "Local llama", "baseUrl": "http://localhost:11434/v1", "apiKey": "x", "provider": "generic-chat-completion-api" }
  ],
  "autonomyLevel": "low"
}
`},
}

// malformed is a broken file of each format, and the line it breaks on.
var malformed = map[format]struct {
	text string
	line int
}{
	jsonc:    {"{\n  \"a\": 1\n  \"b\": 2\n}\n", 3},
	tomlFile: {"model = \"o3\"\n[profiles\n", 2},
}

func target() Target {
	return Target{BaseURL: "http://127.0.0.1:3456", Models: []string{"sonnet", "opus"}, SetDefault: true}
}

func TestSetupEveryClient(t *testing.T) {
	for _, c := range Clients() {
		t.Run(c.Name+"/fresh", func(t *testing.T) {
			home := t.TempDir()
			p := prepare(t, c, target(), home)
			for _, ch := range p.Changes {
				if ch.Existed {
					t.Fatalf("fresh HOME, yet %s existed", ch.Path)
				}
			}
			apply(t, p, home)
			for _, ch := range p.Changes {
				if fi, err := os.Stat(ch.Path); err != nil || fi.Mode().Perm() != 0o600 {
					t.Fatalf("%s: %v %v, want a private file", ch.Path, fi.Mode(), err)
				}
			}
			again := prepare(t, c, target(), home)
			if len(again.Changes) != 0 {
				t.Fatalf("a second run would change:\n%s", again.Diff())
			}
			undo(t, c, home)
			for _, ch := range p.Changes {
				if _, err := os.Stat(ch.Path); !os.IsNotExist(err) {
					t.Fatalf("undo left %s, which setup created", ch.Path)
				}
			}
		})
		t.Run(c.Name+"/existing", func(t *testing.T) {
			home := t.TempDir()
			ex := existing[c.Name]
			file := filepath.Join(home, ex.path)
			write(t, file, ex.text, 0o644)
			p := prepare(t, c, target(), home)
			diff := p.Diff()
			// A line of the user's may only come back with a comma added
			// (JSON needs one before a new member) or, for codex, with
			// the default model changed.
			for _, line := range strings.Split(diff, "\n") {
				if !strings.HasPrefix(line, "-") || strings.HasPrefix(line, "---") {
					continue
				}
				if !strings.Contains(diff, "\n+"+line[1:]+",") && line != `-model = "o3"  # my default` {
					t.Errorf("the diff removes a line of the user's: %q\n%s", line, diff)
				}
			}
			apply(t, p, home)
			after, _ := os.ReadFile(file)
			if fi, _ := os.Stat(file); fi.Mode().Perm() != 0o644 {
				t.Errorf("the file's mode became %v", fi.Mode())
			}
			for _, keep := range []string{"permissions I granted", "my usual provider", "# codex settings", "[profiles.fast]", "ollama", "gopls", "Local llama"} {
				if strings.Contains(ex.text, keep) && !strings.Contains(string(after), keep) {
					t.Errorf("%q was lost:\n%s", keep, after)
				}
			}
			backups := filepath.Join(home, "backups", c.Name)
			entries, _ := os.ReadDir(backups)
			for _, e := range entries {
				if fi, _ := e.Info(); fi.Mode().Perm() != 0o600 {
					t.Errorf("backup %s has mode %v", e.Name(), fi.Mode())
				}
			}
			if fi, _ := os.Stat(backups); fi.Mode().Perm() != 0o700 {
				t.Errorf("backup folder mode %v", fi.Mode())
			}
			if again := prepare(t, c, target(), home); len(again.Changes) != 0 {
				t.Fatalf("a second run would change:\n%s", again.Diff())
			}
			// A second setup with another port keeps the first backup.
			moved := target()
			moved.BaseURL = "http://127.0.0.1:4000"
			apply(t, prepare(t, c, moved, home), home)
			undo(t, c, home)
			if now, _ := os.ReadFile(file); string(now) != ex.text {
				t.Fatalf("undo did not restore the file byte for byte:\n%s", now)
			}
		})
		t.Run(c.Name+"/malformed", func(t *testing.T) {
			home := t.TempDir()
			files, _ := c.plan(target(), locator{home: home, exists: func(string) bool { return false }})
			bad := malformed[files[0].format]
			write(t, files[0].path, bad.text, 0o644)
			_, err := Prepare(c, target(), nil, home)
			want := files[0].path + ":" + itoa(bad.line) + ":"
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("got %v, want an error naming %s", err, want)
			}
			if now, _ := os.ReadFile(files[0].path); string(now) != bad.text {
				t.Fatal("the malformed file was touched")
			}
		})
	}
}

func TestSetupHonoursTheClientsOwnLocations(t *testing.T) {
	home, elsewhere := t.TempDir(), t.TempDir()
	for name, env := range map[string]map[string]string{
		"claude-code": {"CLAUDE_CONFIG_DIR": elsewhere},
		"opencode":    {"XDG_CONFIG_HOME": elsewhere, "XDG_DATA_HOME": elsewhere},
		"codex":       {"CODEX_HOME": elsewhere},
		"pi":          {"PI_CODING_AGENT_DIR": elsewhere},
		"crush":       {"XDG_CONFIG_HOME": elsewhere},
	} {
		c, _ := Lookup(name)
		p, err := Prepare(c, target(), env, home)
		if err != nil {
			t.Fatal(err)
		}
		for _, ch := range p.Changes {
			if !strings.HasPrefix(ch.Path, elsewhere) {
				t.Errorf("%s: writes %s, not under the client's override %v", name, ch.Path, env)
			}
		}
	}
}

// OPENCODE_CONFIG names the config file; the plugin still goes where
// OpenCode loads the user's own plugins, and the provider's stored
// credential (which lets the plugin give it its fetch) where OpenCode
// keeps credentials, readable by its owner only.
func TestSetupOpenCodeConfigFileAndPlugin(t *testing.T) {
	home, elsewhere := t.TempDir(), t.TempDir()
	file := filepath.Join(elsewhere, "oc.json")
	p, err := Prepare(mustLookup("opencode"), target(), map[string]string{"OPENCODE_CONFIG": file}, home)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Changes) != 3 || p.Changes[0].Path != file || p.Changes[1].Path != filepath.Join(home, ".config", "opencode", "plugin", "meridian.ts") ||
		p.Changes[2].Path != filepath.Join(home, ".local", "share", "opencode", "auth.json") || !p.Changes[2].Private {
		t.Fatalf("changes: %+v", p.Changes)
	}
	if !strings.Contains(string(p.Changes[1].After), `"chat.headers"`) {
		t.Fatal("the plugin is not the embedded one")
	}
}

func TestSetupNamesTheKeyNotItsValue(t *testing.T) {
	tg := target()
	tg.KeyEnv = "MERIDIAN_API_KEY"
	for _, c := range Clients() {
		p := prepare(t, c, tg, t.TempDir())
		text := ""
		for _, ch := range p.Changes {
			text += string(ch.After)
		}
		if !strings.Contains(text, "MERIDIAN_API_KEY") || placeholder.MatchString(text) {
			t.Errorf("%s: the key is not read from MERIDIAN_API_KEY:\n%s", c.Name, text)
		}
		if !strings.Contains(strings.Join(p.Notes, "\n"), "export MERIDIAN_API_KEY") {
			t.Errorf("%s: setup does not say which variable to export: %q", c.Name, p.Notes)
		}
	}
}

func TestUndoRefusesAFileChangedSince(t *testing.T) {
	home := t.TempDir()
	c, _ := Lookup("codex")
	ex := existing["codex"]
	file := filepath.Join(home, ex.path)
	write(t, file, ex.text, 0o644)
	apply(t, prepare(t, c, target(), home), home)
	edited := append(must(os.ReadFile(file)), "# mine\n"...)
	write(t, file, string(edited), 0o644)
	if _, err := Undo(c, filepath.Join(home, "backups")); err == nil || !strings.Contains(err.Error(), file) {
		t.Fatalf("undo over a later edit: %v", err)
	}
	if now, _ := os.ReadFile(file); string(now) != string(edited) {
		t.Fatal("the refused undo touched the file")
	}
}

// Codex reads a profile from $CODEX_HOME/NAME.config.toml and refuses
// --profile while config.toml holds a [profiles.NAME] table: setup writes
// the profile's file, leaves a config.toml without that table untouched,
// and removes the table an earlier setup wrote.
func TestTheEditsAreWhatTheClientsRead(t *testing.T) {
	home := t.TempDir()
	ex := existing["codex"]
	write(t, filepath.Join(home, ex.path), ex.text, 0o644)
	tg := target()
	tg.SetDefault = false
	p := prepare(t, mustLookup("codex"), tg, home)
	if len(p.Changes) != 1 || filepath.Base(p.Changes[0].Path) != "meridian.config.toml" {
		t.Fatalf("setup without --set-default changed more than the profile:\n%s", p.Diff())
	}
	got := string(p.Changes[0].After)
	for _, want := range []string{"model_provider = \"meridian\"\nmodel = \"sonnet\"\n", `base_url = "http://127.0.0.1:3456/v1"`, `wire_api = "responses"`} {
		if !strings.Contains(got, want) {
			t.Errorf("codex profile lacks %s:\n%s", want, got)
		}
	}
	if err := confedit.ValidTOML(p.Changes[0].After); err != nil {
		t.Fatal(err)
	}

	legacy := ex.text + "\n[profiles.meridian]\nmodel_provider = \"meridian\"\nmodel = \"sonnet\"\n"
	write(t, filepath.Join(home, ex.path), legacy, 0o644)
	p = prepare(t, mustLookup("codex"), tg, home)
	if len(p.Changes) != 2 || string(p.Changes[1].After) != ex.text {
		t.Fatalf("the earlier setup's [profiles.meridian] was not removed alone:\n%s", p.Diff())
	}
}

var placeholder = regexp.MustCompile(`(?i)(key|token)"?\s*[:=]\s*"meridian"`)

func prepare(t *testing.T, c Client, tg Target, home string) Plan {
	t.Helper()
	p, err := Prepare(c, tg, nil, home)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func apply(t *testing.T, p Plan, home string) {
	t.Helper()
	if err := p.Apply(filepath.Join(home, "backups")); err != nil {
		t.Fatal(err)
	}
}

func undo(t *testing.T, c Client, home string) {
	t.Helper()
	if _, err := Undo(c, filepath.Join(home, "backups")); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, path, text string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), mode); err != nil {
		t.Fatal(err)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func mustLookup(name string) Client { return must(Lookup(name)) }

func itoa(n int) string { return strconv.Itoa(n) }

// --key writes the key itself where each client reads it, in files only
// their owner can read; undo puts the files back with their own modes.
func TestSetupWritesAKey(t *testing.T) {
	tg := target()
	tg.Key = "mk-secret-123"
	for _, c := range Clients() {
		t.Run(c.Name, func(t *testing.T) {
			home := t.TempDir()
			if ex, ok := existing[c.Name]; ok {
				write(t, filepath.Join(home, ex.path), ex.text, 0o644)
			}
			p := prepare(t, c, tg, home)
			apply(t, p, home)
			held := false
			for _, ch := range p.Changes {
				if !strings.Contains(string(ch.After), tg.Key) {
					continue
				}
				held = true
				if info, err := os.Stat(ch.Path); err != nil || info.Mode().Perm() != 0o600 {
					t.Errorf("%s holds the key with mode %v (%v)", ch.Path, info.Mode().Perm(), err)
				}
			}
			if !held || placeholder.MatchString(string(p.Changes[0].After)) {
				t.Fatalf("no file holds the key, or the placeholder is still there:\n%s", p.Diff())
			}
			if _, err := Undo(c, filepath.Join(home, "backups")); err != nil {
				t.Fatal(err)
			}
			if ex, ok := existing[c.Name]; ok {
				if info, _ := os.Stat(filepath.Join(home, ex.path)); info.Mode().Perm() != 0o644 {
					t.Errorf("undo left mode %v", info.Mode().Perm())
				}
			}
		})
	}
}

// Claude Code sends a set ANTHROPIC_AUTH_TOKEN before its key helper's
// key: re-pointing a client set up without a key at a variable empties
// the placeholder token, which Claude Code takes for unset.
func TestClaudeCodeRepointedAtAVariableDropsThePlaceholder(t *testing.T) {
	home := t.TempDir()
	c := mustLookup("claude-code")
	apply(t, prepare(t, c, target(), home), home)
	tg := target()
	tg.KeyEnv = "MERIDIAN_API_KEY"
	p := prepare(t, c, tg, home)
	got := string(p.Changes[0].After)
	if !strings.Contains(got, `"apiKeyHelper": "printenv MERIDIAN_API_KEY"`) || !strings.Contains(got, `"ANTHROPIC_AUTH_TOKEN": ""`) {
		t.Fatalf("settings after re-pointing:\n%s", got)
	}
}
