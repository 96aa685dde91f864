// Package codex drives OpenAI's codex CLI as the gateway's backend over
// `codex app-server` (JSON-RPC on stdio, see appserver): one live process
// per conversation, each holding one thread. Codex owns the login, the
// model calls and their retries; Meridian owns the thread's life, the
// client's tools (served over MCP by toolhost, every call held for the
// client) and the refusal of everything codex would do on this machine by
// itself: its own tools are switched off, its sandbox is read-only, its
// working folder is an empty private one, and every approval it asks for
// is declined.
package codex

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/pelletier/go-toml/v2"

	"github.com/meridian-gw/meridian/internal/backend"
	"github.com/meridian-gw/meridian/internal/backend/codex/appserver"
	"github.com/meridian-gw/meridian/internal/backend/subproc"
	"github.com/meridian-gw/meridian/internal/backend/toolhost"
)

// InstallHint says how to get codex.
const InstallHint = "install it with `npm install -g @openai/codex`, sign in once with `codex login` (a ChatGPT plan or an API key), " +
	"or point --codex-path / MERIDIAN_CODEX_PATH at the binary"

// Defaults for Config.
const (
	DefaultInterruptGrace = 5 * time.Second
	DefaultStartTimeout   = 30 * time.Second
)

// Config configures a Driver.
type Config struct {
	Path string // the binary, "codex" on PATH by default
	// Env is codex's environment: CODEX_HOME (or HOME) decides whose
	// login and threads it uses. Other CLIs' variables are removed.
	Env []string
	// SessionRoot is where each session's private working folder is made.
	SessionRoot string
	Launcher    subproc.Launcher
	Logger      *slog.Logger
	// ExitGrace and KillGrace stage a closed session's exit (0: subproc's
	// defaults); InterruptGrace bounds the wait for an interrupted turn.
	ExitGrace, KillGrace, InterruptGrace time.Duration
	// Tools mounts sessions' client tools on the gateway's listener;
	// sessions with client tools need it.
	Tools *toolhost.Registry
	// Trace, when set, sees every protocol line of every session ("in"
	// from codex, "out" to it); tests check them against the recorded
	// protocol.
	Trace func(dir string, line []byte)
}

// What the driver and its sessions are, checked by the compiler.
var (
	_ backend.Backend        = (*Driver)(nil)
	_ backend.Inspector      = (*Driver)(nil)
	_ backend.SpareBackend   = (*Driver)(nil)
	_ backend.EndOnly        = (*Driver)(nil)
	_ backend.NoOutputLimit  = (*Driver)(nil)
	_ backend.SchemaEnforcer = (*Driver)(nil)
	_ backend.PlanReader     = (*Driver)(nil)
	_ backend.Session        = (*Session)(nil)
	_ backend.Binder         = (*Session)(nil)
	_ backend.Freezer        = (*Session)(nil)
	_ backend.Measurer       = (*Session)(nil)
	_ backend.Processor      = (*Session)(nil)
	_ backend.Yielder        = (*Session)(nil)
)

// Driver starts codex sessions and answers what the gateway asks about
// codex.
type Driver struct {
	cfg Config
	log *slog.Logger

	mu     sync.Mutex
	models []backend.Model // model/list's answer, once read
}

// New returns a Driver.
func New(cfg Config) *Driver {
	if cfg.Path == "" {
		cfg.Path = "codex"
	}
	if cfg.Launcher == nil {
		cfg.Launcher = subproc.ExecLauncher{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.SessionRoot == "" {
		cfg.SessionRoot = filepath.Join(os.TempDir(), "meridian-codex")
	}
	if cfg.InterruptGrace <= 0 {
		cfg.InterruptGrace = DefaultInterruptGrace
	}
	return &Driver{cfg: cfg, log: cfg.Logger}
}

// ResumesAtEndOnly implements backend.EndOnly: a codex thread continues
// where it ends.
func (d *Driver) ResumesAtEndOnly() {}

// IgnoresOutputLimit implements backend.NoOutputLimit: codex takes no
// bound on an answer's length.
func (d *Driver) IgnoresOutputLimit() {}

// EnforcesSchema implements backend.SchemaEnforcer: a turn's output
// schema is codex's outputSchema, which has the model answer in it.
func (d *Driver) EnforcesSchema() {}

// Locate finds the binary, or returns an error wrapping
// backend.ErrUnavailable that says how to install it.
func (d *Driver) Locate() (string, error) { return backend.Locate("codex", d.cfg.Path, InstallHint) }

// Version runs `codex --version` ("codex-cli 0.171.0").
func (d *Driver) Version(ctx context.Context) (string, error) {
	out, _, err := d.run(ctx, "--version")
	if err != nil {
		return "", err
	}
	v := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(out)), "codex-cli"))
	if v == "" {
		return "", errors.New("codex --version printed nothing")
	}
	return v, nil
}

// Auth runs `codex login status`, which exits 0 only when signed in and
// says how. A login whose config answers with a provider of its own
// (model_provider other than openai) needs no OpenAI sign-in.
func (d *Driver) Auth(ctx context.Context) (backend.Auth, error) {
	if p := d.provider(); p != "" && p != "openai" {
		if _, err := d.Locate(); err != nil {
			return backend.Auth{}, err
		}
		return backend.Auth{LoggedIn: true, Method: "provider", Provider: p}, nil
	}
	out, stderr, err := d.run(ctx, "login", "status")
	said := strings.ToLower(string(out) + string(stderr))
	var exit *exec.ExitError
	switch {
	case err == nil && strings.Contains(said, "chatgpt"):
		return backend.Auth{LoggedIn: true, Method: "chatgpt", Provider: "openai"}, nil
	case err == nil:
		return backend.Auth{LoggedIn: true, Method: "api_key", Provider: "openai"}, nil
	case errors.As(err, &exit):
		return backend.Auth{LoggedIn: false, Provider: "openai"}, nil
	}
	return backend.Auth{}, err
}

// Models asks a short-lived app-server for model/list: codex's presets
// for its login. Read once per driver.
func (d *Driver) Models(ctx context.Context) ([]backend.Model, error) {
	d.mu.Lock()
	known := d.models
	d.mu.Unlock()
	if known != nil {
		return known, nil
	}
	var list struct {
		Data []struct {
			ID          string `json:"id"`
			Model       string `json:"model"`
			DisplayName string `json:"displayName"`
			Description string `json:"description"`
		} `json:"data"`
	}
	if err := d.ask(ctx, "model/list", map[string]any{}, &list); err != nil {
		return nil, err
	}
	models := make([]backend.Model, 0, len(list.Data))
	for _, m := range list.Data {
		id := m.Model
		if id == "" {
			id = m.ID
		}
		models = append(models, backend.Model{Alias: m.ID, ID: id, DisplayName: m.DisplayName, Description: m.Description})
	}
	d.mu.Lock()
	d.models = models
	d.mu.Unlock()
	return models, nil
}

// provider is the model_provider of the login's config.toml ("" for
// none, or when it cannot be read).
func (d *Driver) provider() string {
	home := ""
	for _, kv := range d.cfg.Env {
		if v, ok := strings.CutPrefix(kv, "CODEX_HOME="); ok {
			home = v
		} else if v, ok := strings.CutPrefix(kv, "HOME="); ok && home == "" {
			home = filepath.Join(v, ".codex")
		}
	}
	if home == "" {
		return ""
	}
	b, err := os.ReadFile(filepath.Join(home, "config.toml"))
	if err != nil {
		return ""
	}
	var c struct {
		Provider string `toml:"model_provider"`
	}
	if toml.Unmarshal(b, &c) != nil {
		return ""
	}
	return c.Provider
}

// ask runs one request on an app-server of its own and joins it.
func (d *Driver) ask(ctx context.Context, method string, params, result any) error {
	s, err := d.launch(ctx, backend.StartOptions{}, "ask-")
	if err != nil {
		return err
	}
	defer s.Close()
	if err := s.conn.Call(ctx, method, params, result); err != nil {
		return fmt.Errorf("codex %s: %w", method, err)
	}
	return nil
}

// run executes a short codex command and returns its stdout and stderr.
func (d *Driver) run(ctx context.Context, args ...string) (stdout, stderr []byte, err error) {
	path, err := d.Locate()
	if err != nil {
		return nil, nil, err
	}
	stdout, stderr, err = subproc.Run(ctx, d.cfg.Launcher, subproc.Spec{Path: path, Args: args, Env: d.env()})
	if err != nil {
		return stdout, stderr, fmt.Errorf("codex %s: %w", strings.Join(args, " "), err)
	}
	return stdout, stderr, nil
}

// env is codex's environment: the configured one without other CLIs'
// variables or Meridian's own.
func (d *Driver) env() []string { return backend.StripForeignEnv(d.cfg.Env) }

// connOptions are a session's protocol options: the driver's trace and
// the session's answers to codex's own requests.
func (d *Driver) connOptions(handle appserver.Handler) appserver.Options {
	return appserver.Options{Handle: handle, Trace: d.cfg.Trace}
}
