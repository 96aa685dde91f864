package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       bool
		err        string
	}{
		{name: "empty", text: "", want: true},
		{name: "other tables only", text: "[harness]\n", want: true},
		{name: "disabled", text: "[harness.claude.spawn_watch]\nenabled = false\n", want: false},
		{name: "enabled", text: "harness.claude.spawn_watch.enabled = true\n", want: true},
		{name: "misspelt", text: "[harness.claude.spawnwatch]\nenabled = false\n", err: "unknown setting"},
		{name: "wrong type", text: "[harness.claude.spawn_watch]\nenabled = \"no\"\n", err: "line 2"},
		{name: "not toml", text: "enabled: false\n", err: "line 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.text))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Parse = %+v, %v; want an error with %q", c, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Harness.Claude.SpawnWatch.Enabled; got != tc.want {
				t.Fatalf("spawn_watch.enabled = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	c, err := Load(filepath.Join(dir, "missing.toml"))
	if err != nil || !c.Harness.Claude.SpawnWatch.Enabled {
		t.Fatalf("missing file: %+v, %v", c, err)
	}
	bad := filepath.Join(dir, "bad.toml")
	if err := os.WriteFile(bad, []byte("[harness.claude]\nspawn_wach = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(bad); err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "spawn_wach") {
		t.Fatalf("bad file: %v", err)
	}
	if err := os.Mkdir(filepath.Join(dir, "adir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(filepath.Join(dir, "adir")); err == nil {
		t.Fatal("a directory loaded as a config file")
	}
}

func TestPath(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"MERIDIAN_CONFIG": "/x/m.toml", "HOME": "/h"}, "/x/m.toml"},
		{map[string]string{"XDG_CONFIG_HOME": "/cfg", "HOME": "/h"}, "/cfg/meridian/config.toml"},
		{map[string]string{"HOME": "/h"}, "/h/.config/meridian/config.toml"},
	} {
		if got := Path(tc.env); got != tc.want {
			t.Errorf("Path(%v) = %s, want %s", tc.env, got, tc.want)
		}
	}
}

func TestAliases(t *testing.T) {
	c, err := Parse([]byte("[aliases.\"gpt-4o\"]\nmodel = \"claude-sonnet-5\"\neffort = \"high\"\n[aliases.fast]\nmodel = \"haiku\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if a := c.Aliases["gpt-4o"]; a.Model != "claude-sonnet-5" || a.Effort != "high" || c.Aliases["fast"].Model != "haiku" {
		t.Fatalf("aliases = %+v", c.Aliases)
	}
	if _, err := Parse([]byte("[aliases.fast]\nmodle = \"haiku\"\n")); err == nil {
		t.Fatal("a misspelt alias setting was taken")
	}
}
