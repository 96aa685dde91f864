package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/meridian-gw/meridian/internal/backend/agy"
	"github.com/meridian-gw/meridian/internal/config"
	"github.com/meridian-gw/meridian/internal/gateway"
	"github.com/meridian-gw/meridian/internal/httpapi"
	"github.com/meridian-gw/meridian/internal/pool"
	"github.com/meridian-gw/meridian/internal/profile"
	"github.com/meridian-gw/meridian/internal/responses"
	"github.com/meridian-gw/meridian/internal/serve"
	"github.com/meridian-gw/meridian/internal/telemetry/history"
	"github.com/meridian-gw/meridian/internal/transcripts"
)

// Release builds set these at link time (-ldflags -X, see
// .goreleaser.yaml); a plain go build or go install leaves them empty and
// the build info the go tool stamps names the version and commit.
var releaseVersion, releaseCommit string

// newRootCommand builds the command line; hurry closes when a drain
// should end at once.
func newRootCommand(environ []string, hurry <-chan struct{}) *cobra.Command {
	env := envMap(environ)
	cfg := &serve.Config{Version: version(), Hurry: hurry}
	var envErr error
	serve := func(cmd *cobra.Command, _ []string) error {
		if envErr != nil {
			return envErr
		}
		chosen := func(flag, envName string) bool { return cmd.Flags().Changed(flag) || env[envName] != "" }
		cfg.MaxConcurrentChosen = chosen("max-concurrent", "MERIDIAN_MAX_CONCURRENT")
		cfg.SparesChosen = serve.Chosen{Fixed: chosen("spares", "MERIDIAN_SPARES"),
			Min: chosen("spares-min", "MERIDIAN_SPARES_MIN"), Max: chosen("spares-max", "MERIDIAN_SPARES_MAX")}
		cfg.StoreOnCommandLine = cmd.Flags().Changed("store")
		// A person at a terminal gets lines to read and a first screen;
		// a service manager or a pipe keeps logfmt.
		if f, ok := cmd.ErrOrStderr().(*os.File); ok && profile.IsTerminal(f) {
			cfg.Welcome = true
			if !chosen("log-format", "MERIDIAN_LOG_FORMAT") {
				cfg.LogFormat = "terminal"
			}
		}
		if env["MERIDIAN_API_KEY"] != "" && cfg.APIKey == "" {
			cfg.StartNotes = append(cfg.StartNotes, "MERIDIAN_API_KEY is set here but is a client's key, which serve does not read: the admin key is --admin-key or MERIDIAN_ADMIN_KEY")
		}
		return serve.Run(cmd.Context(), *cfg, environ, cmd.ErrOrStderr())
	}
	root := &cobra.Command{
		Use:   "meridian",
		Short: "A local gateway that answers the Anthropic and OpenAI APIs with the official claude and agy CLIs",
		Long: `meridian serves the Anthropic Messages API and the OpenAI Chat Completions and Responses APIs
on a local port, and answers them by driving the official CLIs you are logged in to (claude, or
Antigravity's agy) as subprocesses. Coding agents and SDKs point at it as they would at the APIs.

Start it with "meridian" (the same as "meridian serve"; "meridian serve --help" lists its flags),
open http://127.0.0.1:3456/ to see what it does, and point a client at it with
"meridian setup CLIENT".`,
		Version:       version(),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE:          serve,
	}
	root.SetVersionTemplate("meridian {{.Version}}\n")
	root.AddGroup(
		&cobra.Group{ID: groupGateway, Title: "Run the gateway:"},
		&cobra.Group{ID: groupClients, Title: "Point clients at it, and who may use it:"},
		&cobra.Group{ID: groupAgents, Title: "Background agents:"})
	root.SetUsageFunc(usage)
	serveCmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the gateway (the default command)",
		Long: `serve runs the gateway on 127.0.0.1:3456 until it is stopped: the first SIGINT or SIGTERM drains it
(running requests finish within --drain-timeout), a second one ends the drain at once. Every flag
has an environment twin (shown beside it); a flag wins over its variable. The settings file
(MERIDIAN_CONFIG, else ~/.config/meridian/config.toml) holds the price overrides for the cost
estimates (see docs/configuration.md).`,
		Example: `  meridian serve                                  # 127.0.0.1:3456, the claude CLI on PATH
  meridian serve --port 4000 --max-live 4         # another port, at most 4 live claude processes
  meridian serve --backend antigravity            # answer with Google Antigravity's agy
  meridian serve --backend codex                  # answer with OpenAI's codex (a ChatGPT plan or an API key)
  MERIDIAN_ADMIN_KEY=… meridian serve --host 0.0.0.0   # beyond loopback: an admin key is required`,
		Args:    cobra.NoArgs,
		GroupID: groupGateway,
		RunE:    serve,
	}
	// The flags belong to both root and serve, so "meridian --port 1" and
	// "meridian serve --port 1" mean the same; the root's help leaves them
	// to serve's.
	for _, c := range []*cobra.Command{root, serveCmd} {
		if err := bindServeFlags(c.Flags(), cfg, env); err != nil && envErr == nil {
			envErr = err
		}
	}
	hideFlags(root.Flags())
	// -C is git's global flag for the spawn commands (meridian -C DIR spawn
	// …, as the spawn spec has it): accepted before the command, shown and
	// taken by spawn, refused for the rest.
	var chdir string
	root.PersistentFlags().StringVarP(&chdir, "directory", "C", "", "act on the project at `DIR`, read-only")
	hideFlags(root.PersistentFlags())
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		if chdir != "" && !underSpawn(cmd) {
			return fmt.Errorf("-C DIR applies to the spawn commands only, not to %q", cmd.CommandPath())
		}
		return nil
	}
	versionCmd := newVersionCommand(env)
	status, service := newStatusCommand(env), newServiceCommand(env)
	status.GroupID, service.GroupID = groupGateway, groupGateway
	setup, key, prof, alert := newSetupCommand(env, environ), newKeyCommand(env), newProfileCommand(env, environ), newAlertCommand(env)
	alias, requests := newAliasCommand(env), newRequestsCommand(env)
	setup.GroupID, key.GroupID, prof.GroupID, alert.GroupID, alias.GroupID = groupClients, groupClients, groupClients, groupClients, groupClients
	requests.GroupID = groupClients
	spawn, claude := newSpawnCommand(env, environ, &chdir), newClaudeCommand(env, environ)
	spawn.GroupID, claude.GroupID = groupAgents, groupAgents
	root.AddCommand(serveCmd, status, service, setup, key, prof, alert, alias, requests, spawn, claude, versionCmd,
		newAgyGateCommand(), newGenDocsCommand(func() *cobra.Command { return newRootCommand(environ, hurry) }))
	return root
}

// underSpawn reports whether cmd is `meridian spawn` or one of its own.
func underSpawn(cmd *cobra.Command) bool {
	for c := cmd; c != nil; c = c.Parent() {
		if c.Name() == "spawn" && c.Parent() != nil && !c.Parent().HasParent() {
			return true
		}
	}
	return false
}

// newAgyGateCommand is the hook agy runs in sessions with client tools:
// PreToolUse asks whether a tool may run, PreInvocation (--steer) asks
// for the steering the client sent beside its results.
func newAgyGateCommand() *cobra.Command {
	var steer bool
	cmd := &cobra.Command{
		Use:    "agy-gate",
		Short:  "Ask the gateway whether agy may run a tool (agy's hook; not for people)",
		Args:   cobra.NoArgs,
		Hidden: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			run := agy.RunGate
			if steer {
				run = agy.RunSteer
			}
			if code := run(cmd.Context(), ".", cmd.InOrStdin(), cmd.OutOrStdout()); code != 0 {
				return exitCode(code)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&steer, "steer", false, "answer agy's PreInvocation hook with the client's steering")
	return cmd
}

// twin is a flag's default from its environment twin: the variable's
// value when set and valid; def otherwise, noting a value that does not
// parse as what (a description, "an integer").
func twin[T any](env map[string]string, name string, def T, parse func(string) (T, error), what string, note func(error)) T {
	v, ok := env[name]
	if !ok || v == "" {
		return def
	}
	x, err := parse(v)
	if err != nil {
		note(fmt.Errorf("%s=%q: not %s", name, v, what))
		return def
	}
	return x
}

// bindServeFlags declares the serve flags; each has an environment twin
// that sets its default, and the flag wins over the variable.
func bindServeFlags(fs *pflag.FlagSet, cfg *serve.Config, env map[string]string) error {
	var firstErr error
	note := func(err error) {
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	str := func(p *string, name, envName, def, usage string) {
		fs.StringVar(p, name, twin(env, envName, def, func(v string) (string, error) { return v, nil }, "", note), usage+" ("+envName+")")
	}
	integer := func(p *int, name, envName string, def int, usage string) {
		fs.IntVar(p, name, twin(env, envName, def, strconv.Atoi, "an integer", note), usage+" ("+envName+")")
	}
	str(&cfg.Host, "host", "MERIDIAN_HOST", "127.0.0.1", "address to listen on")
	integer(&cfg.Port, "port", "MERIDIAN_PORT", 3456, "port to listen on")
	str(&cfg.ClaudePath, "claude-path", "MERIDIAN_CLAUDE_PATH", "claude", "the claude CLI binary, a path or a name on PATH")
	str(&cfg.Backend, "backend", "MERIDIAN_BACKEND", serve.BackendClaude, "which CLI answers: claude, antigravity (Google Antigravity's agy), codex (OpenAI's codex), or combined (all three: a request's model picks the CLI)")
	str(&cfg.AgyPath, "agy-path", "MERIDIAN_AGY_PATH", "agy", "the agy CLI binary, for --backend antigravity")
	str(&cfg.CodexPath, "codex-path", "MERIDIAN_CODEX_PATH", "codex", "the codex CLI binary, for --backend codex")
	str(&cfg.AgyAllow, "agy-allow", "MERIDIAN_AGY_ALLOW", "", "agy's own tools to grant, comma-separated: browser (in a profile under the data dir, never yours), subagents (inside the session's workspace); all others stay denied")
	str(&cfg.Transcriber, "transcriber", "MERIDIAN_TRANSCRIBER", "", "a shell command that prints the text of the 16 kHz mono WAV file named by its last argument (e.g. whisper.cpp's whisper-cli -nt -f): how audio reaches agy; none refuses audio")
	integer(&cfg.MaxConcurrent, "max-concurrent", "MERIDIAN_MAX_CONCURRENT", gateway.DefaultMaxConcurrent, "most claude processes running at once")
	str(&cfg.DataDir, "data-dir", "MERIDIAN_DATA_DIR", defaultDataDir(env), "where Meridian keeps its state")
	// --api-key was this flag's name while MERIDIAN_API_KEY was its twin,
	// a name clients use for their own key; the old flag still works.
	fs.StringVar(&cfg.APIKey, "api-key", "", "the admin key (old name of --admin-key)")
	_ = fs.MarkDeprecated("api-key", "use --admin-key (or MERIDIAN_ADMIN_KEY)")
	str(&cfg.APIKey, "admin-key", "MERIDIAN_ADMIN_KEY", "", "the admin key: it alone opens the pages and admin routes, and any route takes it (x-api-key or Authorization: Bearer); needed to listen beyond loopback")
	str(&cfg.LogLevel, "log-level", "MERIDIAN_LOG_LEVEL", "info", "debug, info, warn or error")
	str(&cfg.LogFormat, "log-format", "MERIDIAN_LOG_FORMAT", "text", "text (logfmt), json, or terminal (time, level and message first; the default when stderr is a terminal)")

	duration := func(p *time.Duration, name, envName string, def time.Duration, usage string) {
		fs.DurationVar(p, name, twin(env, envName, def, time.ParseDuration, "a duration (e.g. 30s)", note), usage+" ("+envName+")")
	}
	duration(&cfg.QueueTimeout, "queue-timeout", "MERIDIAN_QUEUE_TIMEOUT", gateway.DefaultQueueTimeout, "longest a request waits for a free claude slot before a 529")
	integer(&cfg.MaxLive, "max-live", "MERIDIAN_MAX_LIVE", pool.DefaultMax, "most claude processes kept alive for their conversations (each idle one holds about 0.2 GB); 0 keeps none and resumes every turn")
	duration(&cfg.IdleTTL, "idle-ttl", "MERIDIAN_IDLE_TTL", pool.DefaultIdleTTL, "how long an idle conversation keeps its claude process")
	duration(&cfg.TurnWait, "turn-wait", "MERIDIAN_TURN_WAIT", gateway.DefaultTurnWait, "longest a turn waits for its conversation's previous turn before a 409")
	integer(&cfg.LiveMemoryMiB, "live-memory", "MERIDIAN_LIVE_MEMORY", serve.DefaultLiveMemoryMiB(), "MiB that idle claude processes and spares may hold in all (measured, PSS); over it the least recently used idle ones close. Default: an eighth of this machine's memory")
	boolean := func(p *bool, name, envName string, def bool, usage string) {
		fs.BoolVar(p, name, twin(env, envName, def, strconv.ParseBool, "a boolean", note), usage+" ("+envName+")")
	}
	boolean(&cfg.Failover, "failover", "MERIDIAN_FAILOVER", false, "move a request refused for a rate limit or overload, before any output, to the next profile by priority that is not benched")
	str(&cfg.Accounts, "accounts", "MERIDIAN_ACCOUNTS", serve.DefaultAccounts, "how a request that names no profile gets one: headroom (a new conversation goes to the profile with the most room left in its plan windows, a running one stays on its profile until that is benched or past --move-at; refusals move on as with --failover) or priority (the default profile; a running conversation stays on its own)")
	fs.Float64Var(&cfg.MoveAt, "move-at", twin(env, "MERIDIAN_MOVE_AT", serve.DefaultMoveAt, func(v string) (float64, error) {
		return strconv.ParseFloat(v, 64)
	}, "a percentage", note), "percent of a plan window past which a conversation leaves its profile and the profile takes no new conversation while another has room, with --accounts headroom (MERIDIAN_MOVE_AT)")
	str(&cfg.AlertAt, "alert-at", "MERIDIAN_ALERT_AT", "80,100", "percentages of a plan window that raise an alert to every sink `meridian alert add` made, once per crossing")
	boolean(&cfg.FreezeIdle, "freeze-idle", "MERIDIAN_FREEZE_IDLE", true, "stop idle claude processes (SIGSTOP) after 5 s, so they cost no CPU; they resume when used")
	integer(&cfg.SparesMin, "spares-min", "MERIDIAN_SPARES_MIN", gateway.DefaultSparesMin, "claude processes always started ahead of need for new conversations, for the model and settings recent ones used most")
	integer(&cfg.SparesMax, "spares-max", "MERIDIAN_SPARES_MAX", serve.DefaultSparesMax(serve.DefaultLiveMemoryMiB()), "most spare claude processes: after a burst of new conversations as many wait as ran at once, for an hour, halving every 15 minutes (0: no spares). Default: half of --live-memory's worth, at most 8 per core")
	fs.Float64Var(&cfg.SpareCPU, "spare-cpu", twin(env, "MERIDIAN_SPARE_CPU", 0, func(v string) (float64, error) {
		f, err := strconv.ParseFloat(v, 64)
		if err == nil && (f < 0 || f > 100) {
			err = fmt.Errorf("out of range")
		}
		return f, err
	}, "a percentage from 0 to 100", note), "percent of one core the starts of spares beyond --spares-min may use, spread over time: 1 keeps a refill after a burst under 1 % of a core, and takes minutes (0: no limit, the refill takes seconds) (MERIDIAN_SPARE_CPU)")
	integer(&cfg.Spares, "spares", "MERIDIAN_SPARES", 0, "a fixed number of spare claude processes: sets --spares-min and --spares-max both (0: none)")
	duration(&cfg.OneOffTTL, "one-off-ttl", "MERIDIAN_ONE_OFF_TTL", pool.DefaultOneOffTTL, "how long the process of a conversation that had one turn and no client session id stays idle (two such at most; as long as --idle-ttl: like any other)")
	duration(&cfg.StallTimeout, "stall-timeout", "MERIDIAN_STALL_TIMEOUT", gateway.DefaultStallTimeout, "a turn whose CLI produces no output for this long is stopped with a 504 and its process closed")
	duration(&cfg.TelemetryMaxAge, "telemetry-max-age", "MERIDIAN_TELEMETRY_MAX_AGE", history.DefaultMaxAge, "how long the per-request telemetry records are kept")
	integer(&cfg.TelemetryMaxRows, "telemetry-max-rows", "MERIDIAN_TELEMETRY_MAX_ROWS", history.DefaultMaxRows, "most per-request telemetry records kept; the oldest go first")
	str(&cfg.Capture, "capture", "MERIDIAN_CAPTURE", "off", "what the request inspector keeps of each model request whose key sets none: off, metadata (its record and headers) or content (also its body, what the CLI was written and the answer), secrets redacted")
	duration(&cfg.CaptureMaxAge, "capture-max-age", "MERIDIAN_CAPTURE_MAX_AGE", serve.DefaultCaptureMaxAge, "how long captured requests are kept")
	integer(&cfg.CaptureMaxMiB, "capture-max-mib", "MERIDIAN_CAPTURE_MAX_MIB", serve.DefaultCaptureMaxMiB, "most MiB of captured requests kept, on every host together; the oldest go first")
	str(&cfg.OTLPEndpoint, "otlp-endpoint", "MERIDIAN_OTLP_ENDPOINT", "", "an OpenTelemetry collector's OTLP/HTTP URL (http://127.0.0.1:4318): each model request's trace goes there; empty: the OTEL_EXPORTER_OTLP_* variables', or none")
	cfg.ConfigPath = config.Path(env)
	duration(&cfg.TranscriptGrace, "transcript-grace", "MERIDIAN_TRANSCRIPT_GRACE", transcripts.DefaultGrace, "delete the claude transcripts no conversation needs once unused this long")
	duration(&cfg.ProfileCopyGrace, "profile-copy-grace", "MERIDIAN_PROFILE_COPY_GRACE", 0, "forget a conversation's copy under a profile it moved away from once unused this long (e.g. 24h), freeing its transcript; it then replays there instead of resuming (0: keep copies)")
	duration(&cfg.PingInterval, "ping-interval", "MERIDIAN_PING_INTERVAL", httpapi.DefaultPingInterval, "how often a quiet stream gets a ping; a host relaying another's stream takes that host for stopped once it is silent longer (use the same on every host)")
	duration(&cfg.DrainTimeout, "drain-timeout", "MERIDIAN_DRAIN_TIMEOUT", httpapi.DefaultDrainTimeout, "on SIGTERM or SIGINT, how long running requests may finish before they are cancelled (a second signal cancels them at once)")

	body := int64(httpapi.DefaultMaxBodyBytes)
	if v, ok := env["MERIDIAN_MAX_BODY_BYTES"]; ok && v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			note(fmt.Errorf("MERIDIAN_MAX_BODY_BYTES=%q: not a positive integer", v))
		} else {
			body = n
		}
	}
	fs.Int64Var(&cfg.MaxBodyBytes, "max-body-bytes", body, "largest request body accepted (MERIDIAN_MAX_BODY_BYTES)")
	duration(&cfg.BodyTimeout, "body-timeout", "MERIDIAN_BODY_TIMEOUT", httpapi.DefaultBodyTimeout, "longest a request body may take to arrive before a 408")

	integer(&cfg.MaxStored, "max-stored-responses", "MERIDIAN_MAX_STORED_RESPONSES", responses.DefaultMaxCount, "most Responses API responses kept for retrieval and previous_response_id; the oldest finished go first")
	storedBytes := int64(responses.DefaultMaxBytes)
	if v, ok := env["MERIDIAN_MAX_STORED_BYTES"]; ok && v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			note(fmt.Errorf("MERIDIAN_MAX_STORED_BYTES=%q: not a positive integer", v))
		} else {
			storedBytes = n
		}
	}
	fs.Int64Var(&cfg.MaxStoredBytes, "max-stored-bytes", storedBytes, "most bytes of stored responses (MERIDIAN_MAX_STORED_BYTES)")
	integer(&cfg.MaxBackground, "max-background", "MERIDIAN_MAX_BACKGROUND", responses.DefaultMaxJobs, "most background responses running at once; more are refused with 529")

	str(&cfg.Store, "store", "MERIDIAN_STORE", "", "where shared state lives: empty for SQLite in the data dir, or a postgres:// DSN shared by several hosts (put the password in PGPASSWORD or a pgpass file, not here)")
	integer(&cfg.StorePool, "store-pool", "MERIDIAN_STORE_POOL", serve.DefaultStorePool, "most connections to PostgreSQL")
	duration(&cfg.StoreTimeout, "store-timeout", "MERIDIAN_STORE_TIMEOUT", serve.DefaultStoreTimeout, "longest one store call may take before its request gets a 503")
	duration(&cfg.HostExpiry, "host-expiry", "MERIDIAN_HOST_EXPIRY", serve.DefaultHostExpiry, "how long another host counts as alive after its last heartbeat (every host sharing a store should use the same)")
	str(&cfg.ClusterKey, "cluster-key", "MERIDIAN_CLUSTER_KEY", "", "the secret the hosts sharing a store forward requests to each other with (the same on every host; prefer the environment): set, each conversation's turns go to the host that holds its process")
	str(&cfg.TestDownloads, "test-downloads", "MERIDIAN_TEST_DOWNLOADS", "", "tests only: a JSON file pointing the Antigravity backend's image downloads at a local server")
	_ = fs.MarkHidden("test-downloads")
	str(&cfg.AllowedHosts, "allowed-hosts", "MERIDIAN_ALLOWED_HOSTS", "", "host names, comma-separated, that a loopback meridian answers besides loopback ones, and whose pages may call it (a name a reverse proxy or /etc/hosts gives this machine)")
	str(&cfg.CrashDSN, "crash-dsn", "MERIDIAN_CRASH_DSN", "", "opt in to crash reports: a Sentry or GlitchTip DSN that each panic's kind, stack and version are sent to (never a prompt, key or path)")
	fs.BoolVar(&cfg.TestPanic, "test-panic", false, "tests only: serve GET /test/panic, which panics")
	_ = fs.MarkHidden("test-panic")
	str(&cfg.Advertise, "advertise", "MERIDIAN_ADVERTISE", "", "the URL the other hosts sharing the store reach this one at (default: where it listens; required with PostgreSQL beyond loopback)")
	return firstErr
}

func envMap(environ []string) map[string]string {
	m := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

// defaultDataDir follows the XDG base directory convention.
func defaultDataDir(env map[string]string) string {
	if d := env["XDG_DATA_HOME"]; d != "" {
		return filepath.Join(d, "meridian")
	}
	if home := env["HOME"]; home != "" {
		return filepath.Join(home, ".local", "share", "meridian")
	}
	return filepath.Join(os.TempDir(), "meridian")
}

// version reports the module version and VCS revision the binary was
// built from.
func version() string {
	if releaseVersion != "" {
		return releaseVersion + " (" + releaseCommit + ")"
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := info.Main.Version
	if v == "" || v == "(devel)" {
		v = "dev"
	}
	var rev, dirty string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev != "" {
		v += " (" + rev + dirty + ")"
	}
	return v
}
