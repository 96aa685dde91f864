// Package claude drives the official claude CLI as a subprocess over its
// stream-json protocol: it builds the command line and environment, speaks
// the control protocol, turns the CLI's output into backend events, and
// joins every process it starts.
package claude

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/url"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/meridian-gw/meridian/internal/backend"
)

// The driver is a backend and an inspector; its processes are sessions.
var (
	_ backend.Backend      = (*Driver)(nil)
	_ backend.Inspector    = (*Driver)(nil)
	_ backend.SpareBackend = (*Driver)(nil)
	_ backend.PlanReader   = (*Driver)(nil)
	_ backend.Binder       = (*Process)(nil)
	_ backend.Session      = (*Process)(nil)
	_ backend.Freezer      = (*Process)(nil)
	_ backend.Measurer     = (*Process)(nil)
	_ backend.ToolSetter   = (*Process)(nil)
	_ backend.ResultHolder = (*Process)(nil)
	_ backend.Recycler     = (*Process)(nil)
	_ Launcher             = ExecLauncher{}
)

// Entrypoint is the CLI's CLAUDE_CODE_ENTRYPOINT tag for sessions Meridian
// starts. The CLI reports it upstream; a Go host speaking the SDK protocol
// is what this tag names.
const Entrypoint = "sdk-go"

// InstallHint tells an operator how to get the CLI.
const InstallHint = "install it with `npm install -g @anthropic-ai/claude-code` (or `claude install`), or point --claude-path / MERIDIAN_CLAUDE_PATH at the binary"

// Config configures a Driver. Zero durations take the defaults below.
type Config struct {
	// Path is the CLI binary: a path, or a name looked up on PATH.
	Path string
	// Env is the environment the CLI inherits, typically os.Environ().
	Env []string
	// SelfAddr is the gateway's own listen address. An ANTHROPIC_BASE_URL
	// pointing there is dropped so the CLI cannot call back into Meridian.
	SelfAddr string
	// Launcher starts processes; nil means ExecLauncher.
	Launcher Launcher
	Logger   *slog.Logger

	// InterruptGrace bounds the wait for a turn to end after an interrupt.
	InterruptGrace time.Duration
	// ExitGrace bounds the wait for the CLI to exit after stdin closes.
	ExitGrace time.Duration
	// KillGrace bounds the wait between SIGTERM and SIGKILL.
	KillGrace time.Duration
	// ToolTimeout is the CLI's own limit on a client tool call
	// (MCP_TOOL_TIMEOUT). A client's tool may run as long as a build; the
	// gateway's idle bound on paused sessions ends forgotten calls first.
	ToolTimeout time.Duration

	// Tap, when set, receives every stdout line of every process as it is
	// read; Stderr receives their stderr. Spawn workers keep both as logs.
	Tap    io.Writer
	Stderr io.Writer
}

// Defaults for Config. Interrupt, exit and kill graces add up to under
// three seconds, the longest a cancelled request may keep its process.
const (
	DefaultInterruptGrace = time.Second
	DefaultExitGrace      = 500 * time.Millisecond
	DefaultKillGrace      = time.Second
	DefaultToolTimeout    = 24 * time.Hour
)

// Driver starts claude CLI sessions. It implements backend.Backend.
type Driver struct {
	cfg    Config
	log    *slog.Logger
	settle time.Duration // how long a new CLI stays awake before a first freeze
}

// New returns a Driver.
func New(cfg Config) *Driver {
	if cfg.Path == "" {
		cfg.Path = "claude"
	}
	if cfg.Launcher == nil {
		cfg.Launcher = ExecLauncher{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.InterruptGrace <= 0 {
		cfg.InterruptGrace = DefaultInterruptGrace
	}
	if cfg.ExitGrace <= 0 {
		cfg.ExitGrace = DefaultExitGrace
	}
	if cfg.KillGrace <= 0 {
		cfg.KillGrace = DefaultKillGrace
	}
	if cfg.ToolTimeout <= 0 {
		cfg.ToolTimeout = DefaultToolTimeout
	}
	d := &Driver{cfg: cfg, log: cfg.Logger}
	if idleGCOn(cfg.Env) {
		d.settle = settleAfterStart
	}
	return d
}

// Locate finds the CLI binary, or returns an error wrapping
// backend.ErrUnavailable that says how to install it.
func (d *Driver) Locate() (string, error) {
	if _, isExec := d.cfg.Launcher.(ExecLauncher); !isExec {
		return d.cfg.Path, nil // a stand-in launcher interprets the path itself
	}
	p, err := exec.LookPath(d.cfg.Path)
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("%w: claude CLI not found (%q): %s", backend.ErrUnavailable, d.cfg.Path, InstallHint)
		}
		return "", fmt.Errorf("%w: claude CLI %q is not usable: %v", backend.ErrUnavailable, d.cfg.Path, err)
	}
	return p, nil
}

// EnforcesSchema implements backend.SchemaEnforcer: the CLI's own
// StructuredOutput tool takes the answer and checks it.
func (d *Driver) EnforcesSchema() {}

// SearchesWeb implements backend.WebSearcher: the CLI's own WebSearch
// tool runs the searches.
func (d *Driver) SearchesWeb() {}

// Start launches a CLI process for one conversation. It returns as soon as
// the process runs: the initialize request is written, not awaited, because
// the CLI prints nothing until the first user message arrives.
func (d *Driver) Start(ctx context.Context, opts backend.StartOptions) (backend.Session, error) {
	p, err := d.launch(ctx, opts)
	if err != nil {
		return nil, err
	}
	if len(opts.Tools) > 0 {
		p.tools = newToolset(opts.Tools)
	}
	if err := p.initialize(opts.System, opts.JSONSchema); err != nil {
		// The process is already gone; the first turn reports how it ended.
		p.log.Debug("could not write initialize", "err", err)
	}
	return p, nil
}

// StartSpare implements backend.SpareBackend: it launches a CLI for the
// start-time options in opts (model, directory, output limit, thinking,
// effort) and leaves it waiting, unbound: the system prompt and the client
// tools travel in initialize, written by Bind when a conversation takes
// it. The CLI boots while it waits, so the conversation's first turn does
// not pay for that.
func (d *Driver) StartSpare(ctx context.Context, opts backend.StartOptions) (backend.Session, error) {
	opts.System, opts.Tools, opts.Resume, opts.ResumeAt, opts.SessionID = nil, nil, "", "", ""
	p, err := d.launch(ctx, opts)
	if err != nil {
		return nil, err
	}
	p.unbound = true
	return p, nil
}

func (d *Driver) launch(ctx context.Context, opts backend.StartOptions) (*Process, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	path, err := d.Locate()
	if err != nil {
		return nil, err
	}
	if opts.SessionID == "" {
		// Chosen here, so the session's id is known before the CLI says.
		opts.SessionID = newSessionID()
	}
	spec := Spec{Path: path, Args: Args(opts), Env: d.env(opts), Dir: opts.Dir}
	proc, err := d.cfg.Launcher.Launch(spec)
	if err != nil {
		return nil, fmt.Errorf("start claude: %w", err)
	}
	p := newProcess(d, proc)
	p.autonomous, p.search, p.fresh = opts.Autonomous, opts.WebSearch, opts.Resume == ""
	p.setSessionID(opts.SessionID)
	return p, nil
}

// Args builds the CLI's argument list for a session.
func Args(opts backend.StartOptions) []string {
	args := []string{
		"--output-format=stream-json",
		"--verbose",
		"--input-format=stream-json",
		"--include-partial-messages",
		// Permission prompts come to us as control requests, never a TTY.
		"--permission-prompt-tool=stdio",
	}
	if !opts.Autonomous {
		args = append(args,
			// The user's settings, CLAUDE.md, MCP servers and slash
			// commands must not leak into a gateway session.
			"--setting-sources=",
			"--strict-mcp-config",
			"--disable-slash-commands",
			// No built-in tools but, when asked for, web search: the
			// client owns whatever other tools exist.
			webSearchArgs(opts.WebSearch),
		)
	}
	if opts.Model != "" {
		args = append(args, "--model="+opts.Model)
	}
	if opts.Resume != "" {
		args = append(args, "--resume="+opts.Resume, "--fork-session")
		if opts.ResumeAt != "" {
			args = append(args, "--resume-session-at="+opts.ResumeAt)
		}
	}
	if opts.SessionID != "" {
		args = append(args, "--session-id="+opts.SessionID)
	}
	switch opts.Thinking.Mode {
	case backend.ThinkingOff:
		args = append(args, "--thinking=disabled")
	case backend.ThinkingAdaptive:
		args = append(args, "--thinking=adaptive")
	case backend.ThinkingEnabled:
		args = append(args, "--max-thinking-tokens="+strconv.Itoa(opts.Thinking.Budget))
	}
	if opts.Effort != "" {
		args = append(args, "--effort="+opts.Effort)
	}
	return args
}

// idleGCVar turns off the full collections the CLI's runtime (Bun) makes
// once its heap has been quiet 10 s, 2 min and 10 min, which also throw
// away compiled code. A live process is idle most of its life, and frozen:
// those collections then run when it thaws, in its next turn, and the code
// is compiled again there (measured on the pinned CLI, frozen 5 s after
// each turn: a turn after 20 s of idle 90–150 ms with them, 60–70 ms
// without; after 130 s, 210 and 70 ms; resident memory after ten turns 191
// and 195 MiB). Set in meridian's environment, the user's value is kept.
const idleGCVar = "BUN_IDLE_GC_SECONDS"

// settleAfterStart is how long a new CLI stays awake before a first freeze
// when its runtime's idle collections are on: the first, about 12 s after
// it starts (0.1–0.2 s of CPU, measured), would otherwise run in its next
// turn, and ten such turns at once took up to 1.2 s instead of 0.4 s.
const settleAfterStart = 30 * time.Second

// idleGCOn says the environment meridian passes on keeps the runtime's
// idle collections.
func idleGCOn(env []string) bool {
	for _, kv := range env {
		if k, v, _ := strings.Cut(kv, "="); k == idleGCVar {
			return v != "0"
		}
	}
	return false
}

// env derives the CLI's environment from the configured one.
func (d *Driver) env(opts backend.StartOptions) []string {
	out := make([]string, 0, len(d.cfg.Env)+6)
	entrypoint, idleGC := false, false
	for _, kv := range d.cfg.Env {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "NODE_OPTIONS", "DEBUG", "CLAUDECODE", "MERIDIAN_API_KEY", "MERIDIAN_ADMIN_KEY", "MERIDIAN_CLUSTER_KEY",
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "CLAUDE_CODE_MAX_OUTPUT_TOKENS", "CLAUDE_CODE_CONFIG_WATCH_EVENTS",
			"ENABLE_TOOL_SEARCH", "MCP_TOOL_TIMEOUT":
			continue
		case "ANTHROPIC_BASE_URL":
			if d.pointsAtSelf(v) {
				d.log.Warn("ignoring ANTHROPIC_BASE_URL: it points at this gateway and would loop", "url", v)
				continue
			}
		case "CLAUDE_CODE_ENTRYPOINT":
			entrypoint = true
		case idleGCVar:
			idleGC = true
		}
		out = append(out, kv)
	}
	if !entrypoint {
		out = append(out, "CLAUDE_CODE_ENTRYPOINT="+Entrypoint)
	}
	if !idleGC {
		out = append(out, idleGCVar+"=0")
	}
	out = append(out, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		// Client tools are offered in full, not behind a search step.
		"ENABLE_TOOL_SEARCH=false",
		// Watch the config file by inotify rather than a stat a second:
		// an idle CLI wakes half as often (13 → 7 times a second, 0.50 →
		// 0.40 % of a core); requests are unchanged.
		"CLAUDE_CODE_CONFIG_WATCH_EVENTS=1",
		"MCP_TOOL_TIMEOUT="+strconv.FormatInt(d.cfg.ToolTimeout.Milliseconds(), 10))
	if opts.MaxOutputTokens > 0 {
		out = append(out, "CLAUDE_CODE_MAX_OUTPUT_TOKENS="+strconv.Itoa(opts.MaxOutputTokens))
	}
	return out
}

func (d *Driver) pointsAtSelf(raw string) bool {
	if d.cfg.SelfAddr == "" {
		return false
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return false
	}
	port := u.Port()
	if port == "" && u.Scheme == "https" {
		port = "443"
	} else if port == "" {
		port = "80"
	}
	selfHost, selfPort, err := net.SplitHostPort(d.cfg.SelfAddr)
	if err != nil || port != selfPort {
		return false
	}
	return sameHost(u.Hostname(), selfHost)
}

func sameHost(a, b string) bool {
	norm := func(h string) string {
		if h == "localhost" || h == "" || h == "0.0.0.0" || h == "::" {
			return "loopback"
		}
		if ip := net.ParseIP(h); ip != nil && ip.IsLoopback() {
			return "loopback"
		}
		return strings.ToLower(h)
	}
	return norm(a) == norm(b)
}

// newSessionID returns a random UUID (version 4) for a new CLI session.
func newSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
