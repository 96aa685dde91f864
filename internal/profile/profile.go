// Package profile keeps Meridian's profiles: named auth contexts for the
// claude CLI, each isolated in its own config dir under the data dir, so
// logins, transcripts and settings never mix. The list lives in
// profiles/profiles.json; a token or key lives only in a file of mode 0600
// under profiles/.secrets/, never in the list, the settings file, a log or
// an answer. Writers in several meridian processes take a lock and
// replace files whole.
package profile

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/meridian-gw/meridian/internal/filelock"

	"github.com/meridian-gw/meridian/internal/atomicfile"
)

// Kind is how a profile authenticates.
type Kind string

// Kinds.
const (
	// Env uses whatever the environment gives the CLI: the implicit
	// default profile, as Meridian ran before profiles.
	Env Kind = "env"
	// Login is a subscription login made with the CLI's own flow in the
	// profile's config dir.
	Login Kind = "login"
	// Token is a long-lived token from `claude setup-token`, given to the
	// CLI as CLAUDE_CODE_OAUTH_TOKEN.
	Token Kind = "token"
	// API is an API key, with an optional base URL.
	API Kind = "api"
	// CodexLogin is a codex login (a ChatGPT plan) made with codex's own
	// flow in the profile's own CODEX_HOME.
	CodexLogin Kind = "codex-login"
	// CodexAPI is an OpenAI API key, kept by codex itself in the
	// profile's own CODEX_HOME (`codex login --with-api-key`).
	CodexAPI Kind = "codex-api"
)

// CLI is the CLI a profile of this kind is for: "codex" for the codex
// kinds, "claude" for the others, "" for env (whichever runs).
func (k Kind) CLI() string {
	switch k {
	case CodexLogin, CodexAPI:
		return "codex"
	case Env:
		return ""
	}
	return "claude"
}

// DefaultName is the implicit profile of kind env.
const DefaultName = "default"

// Profile is one auth context.
type Profile struct {
	Name     string `json:"name"`
	Kind     Kind   `json:"kind"`
	Priority int    `json:"priority"` // lower goes first
	BaseURL  string `json:"base_url,omitempty"`
	// PlanOnly: a subscription that must never draw paid extra usage;
	// once its plan's windows are spent it takes no request until they
	// reset.
	PlanOnly bool `json:"plan_only,omitempty"`
}

// List is what profiles.json holds.
type List struct {
	Default  string    `json:"default"`
	Profiles []Profile `json:"profiles"`
}

// Get finds a profile by name.
func (l List) Get(name string) (Profile, bool) {
	i := slices.IndexFunc(l.Profiles, func(p Profile) bool { return p.Name == name })
	if i < 0 {
		return Profile{}, false
	}
	return l.Profiles[i], true
}

// Find is a profile by name; ErrUnknown, naming the profiles there are,
// when there is none.
func (l List) Find(name string) (Profile, error) {
	p, ok := l.Get(name)
	if !ok {
		return Profile{}, fmt.Errorf("%w: %s (known: %s)", ErrUnknown, name, strings.Join(l.Names(), ", "))
	}
	return p, nil
}

// Names lists the profiles' names.
func (l List) Names() []string {
	out := make([]string, len(l.Profiles))
	for i, p := range l.Profiles {
		out[i] = p.Name
	}
	return out
}

// Errors.
var (
	ErrExists   = errors.New("profile: a profile of that name exists")
	ErrUnknown  = errors.New("profile: no profile of that name")
	ErrBusy     = errors.New("profile: a turn runs on it")
	ErrImplicit = errors.New("profile: the default env profile is implicit and stays")
)

var validName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,31}$`)

// Store is the profiles under one data dir.
type Store struct {
	dir string // <data dir>/profiles
}

// Open returns the store of a data dir; nothing is created until a write.
func Open(dataDir string) *Store { return &Store{dir: filepath.Join(dataDir, "profiles")} }

// ConfigDir is a profile's CLAUDE_CONFIG_DIR.
func (s *Store) ConfigDir(name string) string { return filepath.Join(s.dir, name) }

func (s *Store) listPath() string              { return filepath.Join(s.dir, "profiles.json") }
func (s *Store) secretPath(name string) string { return filepath.Join(s.dir, ".secrets", name) }

// ListPath is the profile list's file.
func (s *Store) ListPath() string { return s.listPath() }

// Dir is the folder of the list, the secrets and the config dirs.
func (s *Store) Dir() string { return s.dir }

// Read returns the list; without a file, the implicit default alone.
func (s *Store) Read() (List, error) {
	b, err := os.ReadFile(s.listPath())
	if errors.Is(err, fs.ErrNotExist) {
		return implicit(), nil
	}
	if err != nil {
		return List{}, fmt.Errorf("profiles: %w", err)
	}
	var l List
	if err := json.Unmarshal(b, &l); err != nil {
		return List{}, fmt.Errorf("profiles: %s: %w", s.listPath(), err)
	}
	if _, ok := l.Get(DefaultName); !ok {
		l.Profiles = append([]Profile{{Name: DefaultName, Kind: Env}}, l.Profiles...)
	}
	if l.Default == "" {
		l.Default = DefaultName
	}
	sortByPriority(l.Profiles)
	return l, nil
}

// Find reads the list and finds a profile in it (List.Find).
func (s *Store) Find(name string) (List, Profile, error) {
	l, err := s.Read()
	if err != nil {
		return List{}, Profile{}, err
	}
	p, err := l.Find(name)
	return l, p, err
}

func implicit() List {
	return List{Default: DefaultName, Profiles: []Profile{{Name: DefaultName, Kind: Env}}}
}

func sortByPriority(ps []Profile) {
	slices.SortStableFunc(ps, func(a, b Profile) int {
		if a.Priority != b.Priority {
			return a.Priority - b.Priority
		}
		return strings.Compare(a.Name, b.Name)
	})
}

// Add records a profile and, for token and api kinds, its secret.
func (s *Store) Add(p Profile, secret string) error {
	if !validName.MatchString(p.Name) {
		return fmt.Errorf("profile name %q: use 1 to 32 lowercase letters, digits, - and _, starting with a letter or digit", p.Name)
	}
	switch p.Kind {
	case Login, CodexLogin, CodexAPI:
		// A codex-api profile's key goes to codex itself, not here.
		if secret != "" {
			return fmt.Errorf("profile: a %s profile keeps no secret of Meridian's", p.Kind)
		}
	case Token, API:
		if strings.TrimSpace(secret) == "" {
			return fmt.Errorf("profile: a %s profile needs its secret on standard input", p.Kind)
		}
	default:
		return fmt.Errorf("profile kind %q: want login, token, api, codex-login or codex-api", p.Kind)
	}
	if p.BaseURL != "" && p.Kind != API {
		return errors.New("profile: only an api profile takes --base-url")
	}
	if err := checkPlanOnly(p); err != nil {
		return err
	}
	return s.update(func(l *List) error {
		if _, ok := l.Get(p.Name); ok {
			return fmt.Errorf("%w: %s", ErrExists, p.Name)
		}
		if err := os.MkdirAll(s.ConfigDir(p.Name), 0o700); err != nil {
			return fmt.Errorf("profile dir: %w", err)
		}
		if secret != "" {
			if err := os.MkdirAll(filepath.Dir(s.secretPath(p.Name)), 0o700); err != nil {
				return fmt.Errorf("profile secrets: %w", err)
			}
			if err := writeFile(s.secretPath(p.Name), []byte(strings.TrimSpace(secret)), 0o600); err != nil {
				return err
			}
		}
		l.Profiles = append(l.Profiles, p)
		return nil
	})
}

// Remove deletes a profile, its secret and its config dir; busy, when set,
// says whether a turn runs on it (then nothing is removed).
func (s *Store) Remove(name string, busy func(string) (bool, error)) error {
	if name == DefaultName {
		return ErrImplicit
	}
	return s.update(func(l *List) error {
		if _, err := l.Find(name); err != nil {
			return err
		}
		if busy != nil {
			b, err := busy(name)
			if err != nil {
				return err
			}
			if b {
				return fmt.Errorf("%w: %s; try again when it has finished", ErrBusy, name)
			}
		}
		l.Profiles = slices.DeleteFunc(l.Profiles, func(p Profile) bool { return p.Name == name })
		if l.Default == name {
			l.Default = DefaultName
		}
		if err := os.Remove(s.secretPath(name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("profile secret: %w", err)
		}
		return os.RemoveAll(s.ConfigDir(name))
	})
}

// Settings are what `profile set` may change of a profile; nil leaves one
// as it is.
type Settings struct {
	Priority *int
	PlanOnly *bool
}

// Set changes a profile's settings.
func (s *Store) Set(name string, set Settings) (Profile, error) {
	var out Profile
	err := s.update(func(l *List) error {
		i := slices.IndexFunc(l.Profiles, func(p Profile) bool { return p.Name == name })
		if i < 0 {
			return fmt.Errorf("%w: %s (known: %s)", ErrUnknown, name, strings.Join(l.Names(), ", "))
		}
		p := l.Profiles[i]
		if set.Priority != nil {
			p.Priority = *set.Priority
		}
		if set.PlanOnly != nil {
			p.PlanOnly = *set.PlanOnly
		}
		if err := checkPlanOnly(p); err != nil {
			return err
		}
		l.Profiles[i], out = p, p
		return nil
	})
	return out, err
}

// checkPlanOnly refuses plan-only on a profile that has no plan: an API
// key pays per token, and the environment's login is not Meridian's to
// judge.
func checkPlanOnly(p Profile) error {
	if p.PlanOnly && p.Kind != Login && p.Kind != Token {
		return fmt.Errorf("profile %s: --plan-only is for subscriptions (kind login or token), not kind %s", p.Name, p.Kind)
	}
	return nil
}

// SetDefault makes name the profile requests use when they name none.
func (s *Store) SetDefault(name string) error {
	return s.update(func(l *List) error {
		if _, err := l.Find(name); err != nil {
			return err
		}
		l.Default = name
		return nil
	})
}

// update runs f on the list under the writers' lock and replaces the file
// whole when f succeeds.
func (s *Store) update(f func(*List) error) error {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("profiles: %w", err)
	}
	unlock, err := lock(filepath.Join(s.dir, ".lock"))
	if err != nil {
		return err
	}
	defer unlock()
	l, err := s.Read()
	if err != nil {
		return err
	}
	if err := f(&l); err != nil {
		return err
	}
	sortByPriority(l.Profiles)
	b, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return fmt.Errorf("profiles: %w", err)
	}
	return writeFile(s.listPath(), append(b, '\n'), 0o600)
}

// Env is the CLI's environment for a profile: base, with the profile's
// config dir and credentials. For every kind but env, credentials the
// base carries are dropped, so another identity cannot leak in.
func (s *Store) Env(p Profile, base []string) ([]string, error) {
	if p.Kind == Env {
		return base, nil
	}
	drop := []string{"CLAUDE_CONFIG_DIR", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_BASE_URL",
		"CODEX_HOME", "OPENAI_API_KEY", "CODEX_API_KEY", "OPENAI_BASE_URL"}
	env := slices.DeleteFunc(slices.Clone(base), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return slices.Contains(drop, k)
	})
	if p.Kind.CLI() == "codex" {
		// codex keeps the login (or the key) in its home: the profile's.
		return append(env, "CODEX_HOME="+s.ConfigDir(p.Name)), nil
	}
	env = append(env, "CLAUDE_CONFIG_DIR="+s.ConfigDir(p.Name))
	switch p.Kind {
	case Token, API:
		secret, err := os.ReadFile(s.secretPath(p.Name))
		if err != nil {
			return nil, fmt.Errorf("profile %s: its secret: %w", p.Name, err)
		}
		if p.Kind == Token {
			env = append(env, "CLAUDE_CODE_OAUTH_TOKEN="+string(secret))
		} else {
			env = append(env, "ANTHROPIC_API_KEY="+string(secret))
			if p.BaseURL != "" {
				env = append(env, "ANTHROPIC_BASE_URL="+p.BaseURL)
			}
		}
	}
	return env, nil
}

// writeFile replaces path whole.
func writeFile(path string, b []byte, mode os.FileMode) error {
	if err := atomicfile.Write(path, b, mode); err != nil {
		return fmt.Errorf("profiles: %w", err)
	}
	return nil
}

func lock(path string) (func(), error) {
	unlock, err := filelock.Lock(path)
	if err != nil {
		return nil, fmt.Errorf("profiles lock: %w", err)
	}
	return unlock, nil
}
