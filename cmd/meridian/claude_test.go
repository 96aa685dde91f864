package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/spawn/registry"
	"github.com/meridian-gw/meridian/internal/store"
	"github.com/meridian-gw/meridian/internal/testkit"
)

// claudeSetup is the environment of one meridian claude launch prepared
// in process: a data dir, a project and a config file of its own.
type claudeSetup struct {
	dataDir, project, config string
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
	s.env = envMap(s.environ)
	return s
}

func (s *claudeSetup) prepare(t *testing.T, tty bool, args ...string) (*claudeLaunch, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return prepareClaude(ctx, s.env, s.environ, args, tty)
}

func (s *claudeSetup) rows(t *testing.T) []registry.Row {
	t.Helper()
	db, err := store.Open(context.Background(), filepath.Join(s.dataDir, "meridian.db"))
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

func envOf(environ []string) map[string]string { return envMap(environ) }

func TestClaudeInteractiveLaunchLoadsTheMod(t *testing.T) {
	s := newClaudeSetup(t, "")
	l, err := s.prepare(t, true, "--model", "opus", "fix the build")
	if err != nil {
		t.Fatal(err)
	}
	if len(l.argv) != 6 || l.argv[1] != "--plugin-dir" || !slices.Equal(l.argv[3:], []string{"--model", "opus", "fix the build"}) {
		t.Fatalf("argv = %q", l.argv)
	}
	dir := l.argv[2]
	if filepath.Dir(dir) != filepath.Join(s.dataDir, "mods", "meridian-spawn-watch") || !strings.HasPrefix(filepath.Base(dir), "0.1.0-") {
		t.Fatalf("mod folder %s", dir)
	}
	for _, f := range []string{".claude-plugin/plugin.json", "hooks/hooks.json", "hooks/register.ts", "tsconfig.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatalf("mod file %s: %v", f, err)
		}
	}
	env := envOf(l.environ)
	self, _ := os.Executable()
	if env["MERIDIAN_SPAWN_ID"] != "p1" || env["MERIDIAN_DEPTH"] != "0" || env["MERIDIAN_PROJECT"] != s.project ||
		env["MERIDIAN_DATA_DIR"] != s.dataDir || env["KEEP"] != "me" || !strings.HasPrefix(env["PATH"], filepath.Dir(self)+":") {
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
	if err != nil || again.argv[2] != dir || envOf(again.environ)["MERIDIAN_SPAWN_ID"] != "p2" {
		t.Fatalf("second launch: %q %v", again.argv, err)
	}
}

func TestClaudeLaunchesWithoutTheMod(t *testing.T) {
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
			if !slices.Equal(l.argv[1:], tc.args) {
				t.Fatalf("argv = %q", l.argv)
			}
			if env := envOf(l.environ); env["MERIDIAN_SPAWN_ID"] != "p1" {
				t.Fatalf("the session is not a lead: %v", env)
			}
			if _, err := os.Stat(filepath.Join(s.dataDir, "mods")); !os.IsNotExist(err) {
				t.Fatalf("the mod was installed: %v", err)
			}
		})
	}
}

func TestClaudeSubcommandsPassThrough(t *testing.T) {
	s := newClaudeSetup(t, "")
	for _, args := range [][]string{{"mcp", "list"}, {"--version"}, {"-p", "x", "--help"}} {
		l, err := s.prepare(t, true, args...)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(l.argv[1:], args) || !slices.Equal(l.environ, s.environ) || l.sc != nil {
			t.Fatalf("%q: argv %q", args, l.argv)
		}
	}
	if rows := s.rows(t); len(rows) != 0 {
		t.Fatalf("subcommands recorded spawns: %+v", rows)
	}
}

func TestClaudeBadSetupRecordsNothing(t *testing.T) {
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

// Through the binary and the real claude: meridian claude -p execs claude
// in its own process, the session is spawn p1, and what it spawns (by
// running meridian by name, not on PATH here) is its child.
func TestClaudePrintSessionIsALead(t *testing.T) {
	t.Parallel()
	w := newSpawnWorld(t, buildBinary(t), testkit.ClaudePath(t), "MERIDIAN_SPAWN_REAP_GRACE=1ms", "MERIDIAN_CONFIG="+filepath.Join(t.TempDir(), "none.toml"))
	w.up.Respond(func(r testkit.Request) testkit.Reply {
		text := r.AllText()
		switch {
		case strings.Contains(text, "task-alpha"):
			return testkit.Reply{Text: "child report"}
		case !strings.Contains(text, `"tool_result"`) && !strings.Contains(string(r.RawBody), `"tool_result"`):
			return testkit.Reply{ToolUses: []testkit.ToolUse{{ID: "toolu_1", Name: "Bash", Input: map[string]any{
				"command":     `echo "$MERIDIAN_SPAWN_ID $MERIDIAN_DEPTH" > lead.txt && meridian spawn -p "task-alpha: a child of the lead"`,
				"description": "spawn a child",
			}}}}
		}
		return testkit.Reply{Text: "spawned it"}
	})
	r := w.run("claude", "-p", "start a child", "--allowedTools", "Bash")
	if r.code != 0 || !strings.Contains(r.out, "spawned it") {
		t.Fatalf("meridian claude -p: exit %d\n%s%s", r.code, r.out, r.err)
	}
	if b, err := os.ReadFile(filepath.Join(w.project, "lead.txt")); err != nil || string(b) != "p1 0\n" {
		t.Fatalf("lead.txt = %q, %v", b, err)
	}
	all := w.until("the child to finish and the session to be reaped", terminal("p1", "p2"))
	lead, child := all["p1"], all["p2"]
	if lead.Kind != "primary" || lead.Status != "succeeded" || lead.Origin != "reconciler" || lead.ParentID != "" {
		t.Fatalf("primary = %+v", lead)
	}
	if child.Kind != "child" || child.ParentID != "p1" || child.Depth != 1 || child.Status != "succeeded" {
		t.Fatalf("child = %+v", child)
	}
	// The lead's children are owed to the lead, not to the project's root,
	// and the primary itself is owed to nobody.
	if d := w.collect(); d.Kind != "empty" {
		t.Fatalf("the root lead was owed %+v", d)
	}
	if d := decodeDelivery(t, w.runEnv([]string{"MERIDIAN_SPAWN_ID=p1"}, "spawn", "collect")); !slices.Equal(d.IDs, []string{"p2"}) {
		t.Fatalf("p1's delivery = %+v", d)
	}
	var v struct{ Spawns []spawnView }
	if err := json.Unmarshal([]byte(w.must("spawn", "list", "--json")), &v); err != nil || len(v.Spawns) != 0 {
		t.Fatalf("the root lead lists %+v (%v)", v.Spawns, err)
	}
}
