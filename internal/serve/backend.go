package serve

import (
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/meridian-gw/meridian/internal/backend"
	"github.com/meridian-gw/meridian/internal/backend/agy"
	"github.com/meridian-gw/meridian/internal/backend/claude"
	"github.com/meridian-gw/meridian/internal/backend/codex"
	"github.com/meridian-gw/meridian/internal/backend/toolhost"
	"github.com/meridian-gw/meridian/internal/backend/workdir"
	"github.com/meridian-gw/meridian/internal/gateway"
	"github.com/meridian-gw/meridian/internal/profile"
)

// The backends --backend chooses between.
const (
	BackendClaude      = "claude"
	BackendAntigravity = "antigravity"
	BackendCodex       = "codex"
	// BackendCombined serves Claude, Antigravity and codex, each with its
	// own processes and limits: a request's model picks the CLI (Gemini
	// models agy, GPT models codex, the rest claude), and /antigravity/
	// and /codex/ serve one each.
	BackendCombined = "combined"
)

// Where --backend combined serves Antigravity and codex by prefix (their
// models are also routed there from the usual routes).
const (
	AntigravityPrefix = "/antigravity"
	CodexPrefix       = "/codex"
)

// mounted is another CLI's gateway under combined: its prefix, and the
// vendor whose models it answers.
type mounted struct {
	gw     *gateway.Gateway
	prefix string
	owner  string
}

// agyToolsPrefix is where agy sessions reach their client tools' MCP
// servers and their gate; codexToolsPrefix where codex sessions reach
// their client tools' MCP servers.
const (
	agyToolsPrefix   = "/agy-tools"
	codexToolsPrefix = "/codex-tools"
)

// backendTools are the client-tool servers of the CLIs that reach tools
// over MCP, each nil unless its backend runs.
type backendTools struct {
	agy   *agy.Endpoints
	codex *toolhost.Registry
}

// driver is a CLI driver: it starts sessions and answers what the gateway
// asks about its CLI.
type driver interface {
	backend.Backend
	gateway.Inspector
}

// cli is the chosen backend: how a profile's driver is made, which
// profiles it serves (their kinds are for one CLI or another; nil: none,
// the environment only), and what is said at start.
type cli struct {
	names    gateway.CLI
	profiles func(profile.Kind) bool
	driver   func(profile string, env []string) driver
	announce func(environ []string, p profile.Profile)
}

// chooseBackend decides, before anything starts, which CLI answers.
func chooseBackend(cfg Config, addr string, tools backendTools, log *slog.Logger) (*cli, error) {
	switch cfg.Backend {
	case "", BackendClaude, BackendCombined:
		return &cli{
			profiles: func(k profile.Kind) bool { return k.CLI() != "codex" },
			driver: func(name string, env []string) driver {
				return claude.New(claude.Config{Path: cfg.ClaudePath, Env: env, SelfAddr: addr,
					Logger: log.With("component", "claude", "profile", name)})
			},
			announce: func(environ []string, p profile.Profile) {
				announceCLI(log, "claude", claude.New(claude.Config{Path: cfg.ClaudePath}))
				for _, k := range []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"} {
					if p.Kind == profile.Env && slices.ContainsFunc(environ, func(kv string) bool { v, ok := strings.CutPrefix(kv, k+"="); return ok && v != "" }) {
						log.Info("the claude CLI will authenticate with "+k+" from this environment, not your claude login", "variable", k)
					}
				}
			},
		}, nil
	case BackendAntigravity:
		return antigravityCLI(cfg, tools.agy, log)
	case BackendCodex:
		return codexCLI(cfg, tools.codex, log), nil
	}
	return nil, fmt.Errorf("--backend %q: want %s, %s, %s or %s", cfg.Backend, BackendClaude, BackendAntigravity, BackendCodex, BackendCombined)
}

// codexCLI is the codex backend; its sessions' client tools are served
// by tools.
func codexCLI(cfg Config, tools *toolhost.Registry, log *slog.Logger) *cli {
	newDriver := func(env []string) *codex.Driver {
		return codex.New(codex.Config{Path: cfg.CodexPath, Env: env, SessionRoot: filepath.Join(cfg.DataDir, "codex-sessions"),
			Tools: tools, Logger: log.With("component", "codex")})
	}
	return &cli{
		names:    gateway.CLI{Name: "codex", Backend: BackendCodex, LoginHint: "run `codex login` (a ChatGPT plan or an API key)", WindowSource: "account/rateLimits/updated", PlanSource: "account/rateLimits/read"},
		profiles: func(k profile.Kind) bool { return k.CLI() != "claude" },
		driver:   func(_ string, env []string) driver { return newDriver(env) },
		announce: func([]string, profile.Profile) { announceCLI(log, "codex", newDriver(nil)) },
	}
}

// antigravityCLI is the agy backend; its sessions' client tools are
// served by tools.
func antigravityCLI(cfg Config, tools *agy.Endpoints, log *slog.Logger) (*cli, error) {
	gate := ""
	if exe, err := os.Executable(); err == nil {
		gate = shellQuote(exe) + " agy-gate"
	}
	download, err := agy.TestDownloader(cfg.TestDownloads)
	if err != nil {
		return nil, err
	}
	allow := splitList(cfg.AgyAllow)
	if err := agy.CheckGrants(allow); err != nil {
		return nil, err
	}
	if len(allow) > 0 {
		log.Warn("agy's own tools are granted: they act on this machine as agy decides", "agy_allow", allow)
	}
	newDriver := func(env []string) *agy.Driver {
		return agy.New(agy.Config{Path: cfg.AgyPath, Env: env, SessionRoot: filepath.Join(cfg.DataDir, "agy-sessions"),
			Endpoints: tools, GateCommand: gate, Download: download, Transcriber: cfg.Transcriber,
			Allow: allow, BrowserHome: filepath.Join(cfg.DataDir, "agy-browser"), Logger: log.With("component", "agy")})
	}
	return &cli{
		names: gateway.CLI{Name: "agy", Backend: BackendAntigravity, LoginHint: "sign in once by running `agy` in a terminal",
			PlanSource: "agy -p /usage"},
		driver:   func(_ string, env []string) driver { return newDriver(env) },
		announce: func([]string, profile.Profile) { announceCLI(log, "agy", newDriver(nil)) },
	}, nil
}

// shellQuote quotes s for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// selfURL is how a process on this machine reaches the listener at addr.
func selfURL(addr net.Addr) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return "http://" + addr.String()
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// announceCLI logs which binary answers, or that none can yet.
func announceCLI(log *slog.Logger, name string, d interface{ Locate() (string, error) }) {
	if path, err := d.Locate(); err != nil {
		log.Warn(name+" CLI not available: requests will fail with 503 until it is", "err", err)
	} else {
		log.Info("using "+name+" CLI", "path", path)
	}
}

// sweepSessionFolders removes the session folders a killed meridian left
// in this data folder: those no process holds any more (see workdir).
// Live sessions of another meridian on the same data folder hold theirs.
func sweepSessionFolders(dataDir string, log *slog.Logger) {
	for _, name := range []string{"agy-sessions", "codex-sessions"} {
		removed, err := workdir.Sweep(filepath.Join(dataDir, name))
		if len(removed) > 0 {
			log.Info("removed session folders a stopped meridian left", "cli_folder", name, "removed", len(removed))
		}
		if err != nil {
			log.Warn("could not remove every session folder a stopped meridian left", "cli_folder", name, "err", err)
		}
	}
}
