// Package agy drives Google Antigravity's agy CLI as the gateway's
// backend: one persistent stream-json session per conversation, in its own
// process group, with a private session folder whose PreToolUse hook denies
// every tool of agy's own. agy cannot be installed on our machines; this
// driver is built from agy's observed protocol and tested against a
// stand-in that replays recorded real output (testkit/fakeagy).
package agy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/meridian-gw/meridian/internal/backend"
	"github.com/meridian-gw/meridian/internal/backend/subproc"
)

// MinVersion is the oldest agy whose persistent stream-json sessions work
// end to end.
const MinVersion = "1.1.18"

// InstallHint says how to get agy.
// It names the site without a scheme: messages to clients have their
// URLs taken out, and this one must stay.
const InstallHint = "agy is Google Antigravity's CLI: install it as antigravity.google/cli says (its installer puts it in ~/.local/bin), " +
	"sign in once by running `agy` in a terminal, or point --agy-path / MERIDIAN_AGY_PATH at the binary"

// Defaults for Config.
const (
	DefaultTurnTimeout  = 30 * time.Minute
	DefaultProbeTimeout = 15 * time.Second
)

// Config configures a Driver.
type Config struct {
	Path string // the binary, "agy" on PATH by default
	// Env is agy's environment: HOME decides where it keeps its login and
	// conversations. Other CLIs' variables are removed from it.
	Env []string
	// SessionRoot is where each session's private folder is made.
	SessionRoot string
	Launcher    subproc.Launcher
	Logger      *slog.Logger
	// ExitGrace is how long a closed session may take to exit before its
	// group gets SIGTERM, and KillGrace how long after that before SIGKILL
	// (0: subproc's defaults).
	ExitGrace, KillGrace time.Duration
	// TurnTimeout is agy's --print-timeout: how long one turn may run.
	TurnTimeout time.Duration
	// ProbeTimeout bounds one attempt of the readiness check; one that
	// runs out is asked once more before it is reported.
	ProbeTimeout time.Duration
	// Endpoints serves sessions' client tools and gates on the gateway's
	// listener, and GateCommand is the shell command of the PreToolUse
	// hook that asks the gate (`meridian agy-gate`). Sessions with client
	// tools need both.
	Endpoints   *Endpoints
	GateCommand string
	// Download fetches the images requests give by URL.
	Download Downloader
	// Transcriber is the shell command that turns a 16 kHz mono WAV file
	// (its last argument) into text on stdout: how audio reaches agy. ""
	// refuses audio. FFmpeg and FFprobe adapt audio and video ("ffmpeg"
	// and "ffprobe" on PATH by default).
	Transcriber     string
	FFmpeg, FFprobe string
	// Allow grants agy's own browser and subagents (GrantBrowser,
	// GrantSubagents); every other tool of agy's stays denied. The
	// browser's profile is kept under BrowserHome, never the user's.
	Allow       []string
	BrowserHome string
}

// What the driver and its sessions are, checked by the compiler: a
// renamed capability method fails the build instead of silently dropping
// the capability.
var (
	_ backend.Backend        = (*Driver)(nil)
	_ backend.Inspector      = (*Driver)(nil)
	_ backend.PlanReader     = (*Driver)(nil)
	_ backend.EndOnly        = (*Driver)(nil)
	_ backend.NoOutputLimit  = (*Driver)(nil)
	_ backend.ModelResolver  = (*Driver)(nil)
	_ backend.SchemaEnforcer = (*Driver)(nil)
	_ backend.MediaAdapter   = (*Driver)(nil)
	_ backend.Closer         = (*Driver)(nil)
	_ backend.Session        = (*Session)(nil)
)

// Driver starts agy sessions and answers what the gateway asks about agy.
type Driver struct {
	cfg       Config
	log       *slog.Logger
	readiness readiness
	// checks are the readiness checks running for callers; closing ends
	// them when the driver closes.
	checks  sync.WaitGroup
	closing context.Context
	stop    context.CancelFunc
}

// New returns a Driver.
func New(cfg Config) *Driver {
	if cfg.Path == "" {
		cfg.Path = "agy"
	}
	if cfg.Launcher == nil {
		cfg.Launcher = subproc.ExecLauncher{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.SessionRoot == "" {
		cfg.SessionRoot = filepath.Join(os.TempDir(), "meridian-agy")
	}
	if cfg.TurnTimeout <= 0 {
		cfg.TurnTimeout = DefaultTurnTimeout
	}
	if cfg.BrowserHome == "" {
		cfg.BrowserHome = cfg.SessionRoot + "-browser"
	}
	if cfg.FFmpeg == "" {
		cfg.FFmpeg = "ffmpeg"
	}
	if cfg.FFprobe == "" {
		cfg.FFprobe = "ffprobe"
	}
	if cfg.ProbeTimeout <= 0 {
		cfg.ProbeTimeout = DefaultProbeTimeout
	}
	closing, stop := context.WithCancel(context.Background())
	return &Driver{cfg: cfg, log: cfg.Logger, closing: closing, stop: stop}
}

// Close ends the readiness check that may be running and joins it.
// Sessions are closed by their owner.
func (d *Driver) Close() {
	d.stop()
	d.checks.Wait()
}

// ResumesAtEndOnly implements backend.EndOnly: agy continues a
// conversation where it ends and has no way to go back.
func (d *Driver) ResumesAtEndOnly() {}

// IgnoresOutputLimit implements backend.NoOutputLimit: agy takes no limit
// on an answer's length, and its usage comes only with the result, too
// late to cut an answer at one.
func (d *Driver) IgnoresOutputLimit() {}

// EnforcesSchema implements backend.SchemaEnforcer: agy's --json-schema
// makes a session's answers fit the schema, checked by agy, and its result
// carries the value.
func (d *Driver) EnforcesSchema() {}

// AdaptsMedia implements backend.MediaAdapter: audio reaches agy as a
// transcript, video as frames (see media.go).
func (d *Driver) AdaptsMedia() {}

// Locate finds the binary, or returns an error wrapping
// backend.ErrUnavailable that says how to install it.
func (d *Driver) Locate() (string, error) { return backend.Locate("agy", d.cfg.Path, InstallHint) }

// Version runs `agy --version`; one older than MinVersion is unavailable.
func (d *Driver) Version(ctx context.Context) (string, error) {
	out, _, err := d.run(ctx, "--version")
	if err != nil {
		return "", err
	}
	v := strings.TrimSpace(string(out))
	if v == "" {
		return "", errors.New("agy --version printed nothing")
	}
	if olderThan(v, MinVersion) {
		return v, fmt.Errorf("%w: agy %s is older than %s, the first whose stream-json sessions work; run `agy update`", backend.ErrUnavailable, v, MinVersion)
	}
	return v, nil
}

// Auth asks `agy models`, the cheapest check: it exits 0 only when signed
// in, and never prompts.
func (d *Driver) Auth(ctx context.Context) (backend.Auth, error) {
	_, stderr, err := d.run(ctx, "models")
	var exit *exec.ExitError
	switch {
	case err == nil:
		return backend.Auth{LoggedIn: true, Method: "google", Provider: "antigravity"}, nil
	case errors.As(err, &exit) && bytes.Contains(stderr, []byte("sign in")):
		return backend.Auth{LoggedIn: false, Provider: "antigravity"}, nil
	}
	return backend.Auth{}, err
}

// Models lists `agy models`: one id<TAB>label line per model.
func (d *Driver) Models(ctx context.Context) ([]backend.Model, error) {
	out, stderr, err := d.run(ctx, "models")
	if err != nil {
		if msg := lastLine(stderr); msg != "" {
			return nil, fmt.Errorf("agy models: %s", msg)
		}
		return nil, err
	}
	var models []backend.Model
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		id, label, _ := strings.Cut(strings.TrimSpace(sc.Text()), "\t")
		if id == "" {
			continue
		}
		if label == "" {
			label = id
		}
		models = append(models, backend.Model{Alias: id, ID: id, DisplayName: strings.TrimSpace(label)})
	}
	return models, nil
}

// run executes a short agy command and returns its stdout and stderr. The
// process is killed when ctx ends and always joined.
func (d *Driver) run(ctx context.Context, args ...string) (stdout, stderr []byte, err error) {
	path, err := d.Locate()
	if err != nil {
		return nil, nil, err
	}
	stdout, stderr, err = subproc.Run(ctx, d.cfg.Launcher, subproc.Spec{Path: path, Args: args, Env: d.env()})
	if err != nil {
		return stdout, stderr, fmt.Errorf("agy %s: %w", strings.Join(args, " "), err)
	}
	return stdout, stderr, nil
}

// env is agy's environment: the configured one without other CLIs'
// variables (a leaked ANTHROPIC_BASE_URL or CLAUDECODE means nothing to
// agy and must not reach its tools), the self-updater off.
func (d *Driver) env() []string {
	return append(backend.StripForeignEnv(d.cfg.Env), "AGY_CLI_DISABLE_AUTO_UPDATE=true")
}

// sessionEnv is a session's environment: with the browser granted, the
// folders a browser keeps its profile in point under BrowserHome, so the
// browser agy starts never opens the user's.
func (d *Driver) sessionEnv() ([]string, error) {
	env := d.env()
	if !slices.Contains(d.cfg.Allow, GrantBrowser) {
		return env, nil
	}
	home := d.cfg.BrowserHome
	for _, sub := range []string{"config", "cache", "data"} {
		if err := os.MkdirAll(filepath.Join(home, sub), 0o700); err != nil {
			return nil, fmt.Errorf("agy browser profile: %w", err)
		}
	}
	return append(env, "CHROME_CONFIG_HOME="+filepath.Join(home, "config"), "XDG_CONFIG_HOME="+filepath.Join(home, "config"),
		"XDG_CACHE_HOME="+filepath.Join(home, "cache"), "XDG_DATA_HOME="+filepath.Join(home, "data")), nil
}

// olderThan compares dotted versions numerically.
func olderThan(v, min string) bool {
	a, b := strings.Split(v, "."), strings.Split(min, ".")
	for i := range max(len(a), len(b)) {
		x, y := part(a, i), part(b, i)
		if x != y {
			return x < y
		}
	}
	return false
}

func part(p []string, i int) int {
	if i >= len(p) {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimFunc(p[i], func(r rune) bool { return r < '0' || r > '9' }))
	return n
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
