package launch

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/spawn"
	"github.com/meridian-gw/meridian/internal/spawn/registry"
	"github.com/meridian-gw/meridian/internal/store/sqlite"
)

// claudeSetup is the environment of one meridian claude launch prepared
// in process: a data dir, a project and a config file of its own.
type claudeSetup struct {
	dataDir, project, config string
	self                     string // a meridian binary not on PATH
	env                      map[string]string
	environ                  []string
}

func newClaudeSetup(t *testing.T, configText string) *claudeSetup {
	t.Helper()
	s := &claudeSetup{dataDir: t.TempDir(), project: t.TempDir(), config: filepath.Join(t.TempDir(), "config.toml")}
	if configText != "" {
		if err := os.WriteFile(s.config, []byte(configText), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	claude := filepath.Join(t.TempDir(), "claude")
	if err := os.WriteFile(claude, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	s.environ = []string{"PATH=" + os.Getenv("PATH"), "MERIDIAN_CLAUDE_PATH=" + claude, "HOME=" + t.TempDir(), "MERIDIAN_DATA_DIR=" + s.dataDir,
		"MERIDIAN_PROJECT=" + s.project, "MERIDIAN_CONFIG=" + s.config, "KEEP=me"}
	s.env = envOf(s.environ)
	s.self = filepath.Join(t.TempDir(), "meridian")
	return s
}

func (s *claudeSetup) prepare(t *testing.T, tty bool, args ...string) (*Session, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return Prepare(ctx, Options{
		Args: args, Terminal: tty, Env: s.env, Environ: s.environ, Claude: s.env[spawn.EnvClaudePath],
		DataDir: s.dataDir, Config: s.config, Self: s.self, Cwd: s.project, Log: slog.New(slog.DiscardHandler),
	})
}

func (s *claudeSetup) rows(t *testing.T) []registry.Row {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(s.dataDir, "meridian.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := registry.New(db).List(context.Background(), s.project)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func envOf(environ []string) map[string]string {
	m := map[string]string{}
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}

func TestInteractiveLaunchLoadsTheMod(t *testing.T) {
	s := newClaudeSetup(t, "")
	l, err := s.prepare(t, true, "--model", "opus", "fix the build")
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Argv) != 6 || l.Argv[1] != "--plugin-dir" || !slices.Equal(l.Argv[3:], []string{"--model", "opus", "fix the build"}) {
		t.Fatalf("argv = %q", l.Argv)
	}
	dir := l.Argv[2]
	if filepath.Dir(dir) != filepath.Join(s.dataDir, "mods", "meridian-spawn-watch") || !strings.HasPrefix(filepath.Base(dir), "0.1.0-") {
		t.Fatalf("mod folder %s", dir)
	}
	for _, f := range []string{".claude-plugin/plugin.json", "hooks/hooks.json", "hooks/register.ts", "tsconfig.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatalf("mod file %s: %v", f, err)
		}
	}
	env := envOf(l.Environ)
	if env["MERIDIAN_SPAWN_ID"] != "p1" || env["MERIDIAN_DEPTH"] != "0" || env["MERIDIAN_PROJECT"] != s.project ||
		env["MERIDIAN_DATA_DIR"] != s.dataDir || env["KEEP"] != "me" || !strings.HasPrefix(env["PATH"], filepath.Dir(s.self)+":") {
		t.Fatalf("environment: %v", env)
	}
	rows := s.rows(t)
	if len(rows) != 1 {
		t.Fatalf("rows = %+v", rows)
	}
	r := rows[0]
	if r.ID != "p1" || r.Kind != registry.KindPrimary || r.Status != "running" || r.RunnerPID != os.Getpid() || r.RunnerStart == 0 || r.Started.IsZero() {
		t.Fatalf("primary row = %+v", r)
	}

	// A second launch reuses the same mod folder and is the next spawn.
	again, err := s.prepare(t, true)
	if err != nil || again.Argv[2] != dir || envOf(again.Environ)["MERIDIAN_SPAWN_ID"] != "p2" {
		t.Fatalf("second launch: %q %v", again.Argv, err)
	}
}

func TestLaunchesWithoutTheMod(t *testing.T) {
	for _, tc := range []struct {
		name   string
		config string
		tty    bool
		args   []string
	}{
		{"disabled in the config", "[harness.claude.spawn_watch]\nenabled = false\n", true, []string{"hello"}},
		{"print mode", "", true, []string{"-p", "hello"}},
		{"print mode, long flag", "", true, []string{"--print", "hello"}},
		{"output not a terminal", "", false, []string{"hello"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newClaudeSetup(t, tc.config)
			l, err := s.prepare(t, tc.tty, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(l.Argv[1:], tc.args) {
				t.Fatalf("argv = %q", l.Argv)
			}
			if env := envOf(l.Environ); env["MERIDIAN_SPAWN_ID"] != "p1" {
				t.Fatalf("the session is not a lead: %v", env)
			}
			if _, err := os.Stat(filepath.Join(s.dataDir, "mods")); !os.IsNotExist(err) {
				t.Fatalf("the mod was installed: %v", err)
			}
		})
	}
}

func TestSubcommandsPassThrough(t *testing.T) {
	s := newClaudeSetup(t, "")
	for _, args := range [][]string{{"mcp", "list"}, {"--version"}, {"-p", "x", "--help"}} {
		l, err := s.prepare(t, true, args...)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(l.Argv[1:], args) || !slices.Equal(l.Environ, s.environ) || l.Primary != "" {
			t.Fatalf("%q: argv %q", args, l.Argv)
		}
	}
	if rows := s.rows(t); len(rows) != 0 {
		t.Fatalf("subcommands recorded spawns: %+v", rows)
	}
}

func TestBadSetupRecordsNothing(t *testing.T) {
	s := newClaudeSetup(t, "[harness.claude.spawn_watch]\nenabeld = false\n")
	if _, err := s.prepare(t, true); err == nil || !strings.Contains(err.Error(), "enabeld") || !strings.Contains(err.Error(), s.config) {
		t.Fatalf("misspelt config: %v", err)
	}
	s.env["MERIDIAN_CLAUDE_PATH"] = "/no/such/claude"
	if _, err := s.prepare(t, false, "-p", "x"); err == nil || !strings.Contains(err.Error(), "MERIDIAN_CLAUDE_PATH") {
		t.Fatalf("missing claude: %v", err)
	}
	if rows := s.rows(t); len(rows) != 0 {
		t.Fatalf("a launch that failed recorded spawns: %+v", rows)
	}
	if _, err := os.Stat(filepath.Join(s.dataDir, "mods")); !os.IsNotExist(err) {
		t.Fatalf("a launch that failed installed the mod: %v", err)
	}
}
