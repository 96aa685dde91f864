package profile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

func TestImportsFlowDownward(t *testing.T) {
	testkit.CheckImports(t, "golang.org/x/sys/unix", "golang.org/x/sys/windows", "internal/atomicfile", "internal/filelock")
}

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode().Perm()
}

func TestAddListDefaultRemove(t *testing.T) {
	data := t.TempDir()
	s := Open(data)
	if l, err := s.Read(); err != nil || l.Default != DefaultName || len(l.Profiles) != 1 || l.Profiles[0].Kind != Env {
		t.Fatalf("a new store: %+v %v", l, err)
	}
	if err := s.Add(Profile{Name: "work", Kind: API, Priority: 2, BaseURL: "http://127.0.0.1:9"}, "sk-work-SECRET\n"); err != nil {
		t.Fatal(err)
	}
	if err := s.Add(Profile{Name: "home", Kind: Token, Priority: 1}, "oat-home-SECRET"); err != nil {
		t.Fatal(err)
	}
	if err := s.Add(Profile{Name: "home", Kind: Login}, ""); !errors.Is(err, ErrExists) {
		t.Fatalf("a second home: %v", err)
	}
	l, err := s.Read()
	if err != nil || strings.Join(l.Names(), ",") != "default,home,work" {
		t.Fatalf("list %v %v", l.Names(), err)
	}
	list, _ := os.ReadFile(filepath.Join(data, "profiles", "profiles.json"))
	if strings.Contains(string(list), "SECRET") {
		t.Fatalf("the list holds a secret:\n%s", list)
	}
	if m := mode(t, s.secretPath("work")); m != 0o600 {
		t.Fatalf("secret file mode %v", m)
	}
	if m := mode(t, s.ConfigDir("work")); m != 0o700 {
		t.Fatalf("config dir mode %v", m)
	}
	if m := mode(t, filepath.Join(data, "profiles", "profiles.json")); m != 0o600 {
		t.Fatalf("list mode %v", m)
	}

	if err := s.SetDefault("work"); err != nil {
		t.Fatal(err)
	}
	if err := s.SetDefault("nope"); !errors.Is(err, ErrUnknown) || !strings.Contains(err.Error(), "home") {
		t.Fatalf("an unknown default: %v", err)
	}
	busy := func(name string) (bool, error) { return name == "work", nil }
	if err := s.Remove("work", busy); !errors.Is(err, ErrBusy) {
		t.Fatalf("removing a busy profile: %v", err)
	}
	if err := s.Remove("work", nil); err != nil {
		t.Fatal(err)
	}
	l, _ = s.Read()
	if l.Default != DefaultName || slices.Contains(l.Names(), "work") {
		t.Fatalf("after remove: %+v", l)
	}
	if _, err := os.Stat(s.secretPath("work")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the secret outlived its profile: %v", err)
	}
	if err := s.Remove(DefaultName, nil); !errors.Is(err, ErrImplicit) {
		t.Fatalf("removing default: %v", err)
	}
}

func TestBadInputIsRefused(t *testing.T) {
	s := Open(t.TempDir())
	for _, tc := range []struct {
		p      Profile
		secret string
	}{
		{Profile{Name: "Bad Name", Kind: API}, "k"},
		{Profile{Name: "x", Kind: "oauth"}, "k"},
		{Profile{Name: "x", Kind: API}, "  "},
		{Profile{Name: "x", Kind: Login}, "k"},
		{Profile{Name: "x", Kind: Token, BaseURL: "http://h"}, "k"},
	} {
		if err := s.Add(tc.p, tc.secret); err == nil {
			t.Errorf("%+v accepted", tc.p)
		}
	}
	if _, err := os.Stat(filepath.Join(s.dir, "profiles.json")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a refused add wrote the list")
	}
}

// Writers in parallel (as several meridian processes) all land.
func TestConcurrentWritersAllLand(t *testing.T) {
	data := t.TempDir()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			if err := Open(data).Add(Profile{Name: fmt.Sprintf("p%d", i), Kind: API}, "k"); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if l, err := Open(data).Read(); err != nil || len(l.Profiles) != 9 {
		t.Fatalf("%d profiles, %v", len(l.Profiles), err)
	}
}

// A profile's environment: its config dir and credential, and none of the
// ambient ones; the env profile passes the environment through.
func TestEnv(t *testing.T) {
	s := Open(t.TempDir())
	if err := s.Add(Profile{Name: "work", Kind: API, BaseURL: "http://127.0.0.1:9"}, "sk-work"); err != nil {
		t.Fatal(err)
	}
	base := []string{"PATH=/bin", "ANTHROPIC_API_KEY=ambient", "CLAUDE_CONFIG_DIR=/home/u/.claude", "CLAUDE_CODE_OAUTH_TOKEN=ambient"}
	l, _ := s.Read()
	work, _ := l.Get("work")
	env, err := s.Env(work, base)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"PATH=/bin", "CLAUDE_CONFIG_DIR=" + s.ConfigDir("work"), "ANTHROPIC_API_KEY=sk-work", "ANTHROPIC_BASE_URL=http://127.0.0.1:9"}
	if !slices.Equal(env, want) {
		t.Fatalf("env %q, want %q", env, want)
	}
	def, _ := l.Get(DefaultName)
	if env, _ := s.Env(def, base); !slices.Equal(env, base) {
		t.Fatalf("the env profile changed the environment: %q", env)
	}
}

// plan-only belongs to subscriptions; set changes it and the priority and
// nothing else.
func TestSetPlanOnly(t *testing.T) {
	s := Open(t.TempDir())
	if err := s.Add(Profile{Name: "key", Kind: API}, "sk-ant-SECRET"); err != nil {
		t.Fatal(err)
	}
	if err := s.Add(Profile{Name: "sub", Kind: Token, PlanOnly: true}, "sk-ant-oat-SECRET"); err != nil {
		t.Fatal(err)
	}
	if err := s.Add(Profile{Name: "bad", Kind: API, PlanOnly: true}, "sk-ant-SECRET"); err == nil {
		t.Fatal("an api profile was made plan-only")
	}
	yes, two := true, 2
	if _, err := s.Set("key", Settings{PlanOnly: &yes}); err == nil {
		t.Fatal("an api profile was set plan-only")
	}
	no := false
	p, err := s.Set("sub", Settings{PlanOnly: &no, Priority: &two})
	if err != nil || p.PlanOnly || p.Priority != 2 || p.Kind != Token {
		t.Fatalf("set: %+v %v", p, err)
	}
	l, _ := s.Read()
	if got, _ := l.Get("sub"); got != p {
		t.Fatalf("stored %+v, want %+v", got, p)
	}
	if _, err := s.Set("gone", Settings{PlanOnly: &yes}); !errors.Is(err, ErrUnknown) {
		t.Fatalf("unknown profile: %v", err)
	}
}

// A codex profile is codex's own home under the profile's folder: the
// ambient codex home and OpenAI keys never reach it, Meridian keeps no
// secret for it, and its kind says which CLI it is for.
func TestCodexProfiles(t *testing.T) {
	s := Open(t.TempDir())
	if err := s.Add(Profile{Name: "gpt", Kind: CodexLogin}, ""); err != nil {
		t.Fatal(err)
	}
	if err := s.Add(Profile{Name: "oai", Kind: CodexAPI}, "sk-SECRET"); err == nil {
		t.Fatal("a codex-api profile kept a secret of Meridian's")
	}
	if err := s.Add(Profile{Name: "oai", Kind: CodexAPI}, ""); err != nil {
		t.Fatal(err)
	}
	base := []string{"PATH=/bin", "CODEX_HOME=/home/u/.codex", "OPENAI_API_KEY=ambient", "CODEX_API_KEY=ambient", "ANTHROPIC_API_KEY=ambient"}
	l, _ := s.Read()
	for _, name := range []string{"gpt", "oai"} {
		p, _ := l.Get(name)
		env, err := s.Env(p, base)
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"PATH=/bin", "CODEX_HOME=" + s.ConfigDir(name)}; !slices.Equal(env, want) {
			t.Fatalf("%s env %q, want %q", name, env, want)
		}
		if p.Kind.CLI() != "codex" {
			t.Fatalf("%s is for %q", name, p.Kind.CLI())
		}
	}
	if Login.CLI() != "claude" || API.CLI() != "claude" || Env.CLI() != "" {
		t.Fatal("the claude kinds are not claude's")
	}
	if entries, _ := os.ReadDir(filepath.Join(s.dir, ".secrets")); len(entries) != 0 {
		t.Fatalf("secrets kept: %v", entries)
	}
}
