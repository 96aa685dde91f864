// Package serve assembles the gateway from its settings and runs it: the
// database, the claude driver, the gateway, stored responses and the HTTP
// server, in the order they depend on each other.
package serve

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/meridian-gw/meridian/internal/alerts"
	"github.com/meridian-gw/meridian/internal/answers"
	"github.com/meridian-gw/meridian/internal/backend/agy"
	"github.com/meridian-gw/meridian/internal/backend/toolhost"
	"github.com/meridian-gw/meridian/internal/capture"
	"github.com/meridian-gw/meridian/internal/cluster"
	"github.com/meridian-gw/meridian/internal/config"
	"github.com/meridian-gw/meridian/internal/crashreport"
	"github.com/meridian-gw/meridian/internal/dispatch"
	"github.com/meridian-gw/meridian/internal/gateway"
	"github.com/meridian-gw/meridian/internal/httpapi"
	"github.com/meridian-gw/meridian/internal/inspector"
	"github.com/meridian-gw/meridian/internal/journal"
	"github.com/meridian-gw/meridian/internal/logring"
	"github.com/meridian-gw/meridian/internal/openai"
	"github.com/meridian-gw/meridian/internal/procmem"
	"github.com/meridian-gw/meridian/internal/profile"
	"github.com/meridian-gw/meridian/internal/reqid"
	"github.com/meridian-gw/meridian/internal/responses"
	"github.com/meridian-gw/meridian/internal/session"
	"github.com/meridian-gw/meridian/internal/sessiontree"
	"github.com/meridian-gw/meridian/internal/termlog"
	"github.com/meridian-gw/meridian/internal/tracing/otlp"
	"github.com/meridian-gw/meridian/internal/transcripts"
)

// Config is everything the gateway is configured with.
type Config struct {
	Host       string
	Port       int
	ClaudePath string
	// Backend is which CLI answers (BackendClaude, BackendAntigravity,
	// BackendCodex or BackendCombined); AgyPath and CodexPath are agy's
	// and codex's binaries.
	Backend   string
	AgyPath   string
	CodexPath string
	// Transcriber turns audio into text for agy (agy.Config.Transcriber).
	Transcriber string
	// AgyAllow grants agy's own browser and subagents, comma-separated
	// (agy.Config.Allow).
	AgyAllow string
	// AllowedHosts are host names, comma-separated, taken besides loopback
	// ones (httpapi.Listen.AllowedHosts).
	AllowedHosts string
	// CrashDSN, when set, sends each handler panic to that Sentry or
	// GlitchTip project (crashreport); TestPanic, for tests only, serves
	// a route that panics.
	CrashDSN  string
	TestPanic bool
	// TestDownloads, for tests only, names a file that points the agy
	// backend's image downloads at a local server (agy.TestDownloader).
	TestDownloads string
	MaxConcurrent int
	// MaxConcurrentChosen reports --max-concurrent set by flag or
	// environment rather than left at its default.
	MaxConcurrentChosen bool
	QueueTimeout        time.Duration
	DataDir             string
	APIKey              string
	MaxBodyBytes        int64
	BodyTimeout         time.Duration
	MaxLive             int
	IdleTTL             time.Duration
	TurnWait            time.Duration
	// Stored Responses API responses and background runs.
	MaxStored      int
	MaxStoredBytes int64
	MaxBackground  int
	LogLevel       string
	LogFormat      string
	Version        string // reported by /health and the startup log
	// StartNotes are logged as warnings once the logger exists: what the
	// command line noticed about how it was started.
	StartNotes []string
	// Welcome writes a few lines for a person at a terminal once the
	// gateway listens: where, and what to do next.
	Welcome      bool
	StallTimeout time.Duration
	// LiveMemoryMiB bounds what idle claude processes hold (0: the default
	// for this machine, DefaultLiveMemoryMiB); OneOffTTL keeps a one-off
	// conversation's process.
	LiveMemoryMiB int
	OneOffTTL     time.Duration
	// SparesMin and SparesMax bound the spare processes; Spares, when
	// chosen, fixes both; SparesChosen says which were set (the others
	// take their defaults, SparesMax one from the memory bound).
	SparesMin, SparesMax, Spares int
	// SpareCPU is the percent of one core the starts of spares beyond the
	// minimum may use, spread over time (0: no limit).
	SpareCPU     float64
	SparesChosen Chosen
	FreezeIdle   bool
	// TranscriptGrace keeps a CLI transcript nothing needs this long after
	// its last write before it is deleted.
	TranscriptGrace time.Duration
	// ProfileCopyGrace, when above 0, prunes a conversation's copy under a
	// profile it moved away from once unused this long (see profileCopies).
	ProfileCopyGrace time.Duration
	// DrainTimeout bounds the drain when ctx ends; Hurry ends it at once.
	DrainTimeout time.Duration
	Hurry        <-chan struct{}
	// PingInterval paces the pings of quiet streams; a host relaying
	// another's stream takes a holder silent for longer as stopped.
	PingInterval time.Duration
	// Failover moves rate-limited requests to the next profile.
	Failover bool
	// Accounts is how a request that names no profile gets one:
	// "headroom" (the default) or "priority"; MoveAt is the percentage of
	// a plan window past which a conversation leaves its profile.
	Accounts string
	MoveAt   float64
	// AlertAt are the percentages of a plan window that raise an alert
	// ("80,100").
	AlertAt string
	// Capture is the request inspector's mode for requests whose key sets
	// none (off, metadata, content); CaptureMaxAge and CaptureMaxMiB bound
	// what it keeps.
	Capture       string
	CaptureMaxAge time.Duration
	CaptureMaxMiB int
	// OTLPEndpoint is where each model request's trace goes (OTLP/HTTP);
	// empty: the OTEL_EXPORTER_OTLP_* environment's, or nowhere.
	OTLPEndpoint string
	// ConfigPath is the settings file (pricing overrides); missing is fine.
	ConfigPath string
	// TelemetryMaxAge and TelemetryMaxRows bound the request history.
	TelemetryMaxAge  time.Duration
	TelemetryMaxRows int
	// Store is where the shared records live: "" for SQLite in the data
	// dir, or a postgres:// DSN. StoreOnCommandLine says it came from the
	// flag (where a password is visible in the process list). StorePool
	// bounds PostgreSQL's connections, StoreTimeout each store call.
	Store              string
	StoreOnCommandLine bool
	StorePool          int
	StoreTimeout       time.Duration
	// HostExpiry is how long another host counts as alive after its last
	// heartbeat. Advertise is the URL the other hosts reach this one at
	// ("": where it listens).
	HostExpiry time.Duration
	Advertise  string
	// ClusterKey is the secret the hosts sharing a store forward each
	// other's requests with: set, a conversation's turns go to the host
	// that holds it.
	ClusterKey string
}

// settleConcurrency makes the two process bounds agree: every running turn
// needs a live process, so a lowered --max-live lowers the default
// --max-concurrent with it; only an explicit --max-concurrent above
// --max-live is a contradiction.
func settleConcurrency(maxConcurrent, maxLive int, chosen bool) (int, error) {
	if maxLive >= maxConcurrent {
		return maxConcurrent, nil
	}
	if chosen {
		return 0, fmt.Errorf("--max-live %d is below --max-concurrent %d: every running turn needs a live process; lower --max-concurrent or raise --max-live", maxLive, maxConcurrent)
	}
	return maxLive, nil
}

// DefaultLiveMemoryMiB is the memory idle claude processes and spares may
// hold by default: an eighth of the machine's memory, which leaves the
// rest to the system and to the turns running (a busy claude is not
// counted). An idle claude holds about 105 MiB (PSS): about nine on an
// 8 GiB machine, 29 on 24 GiB.
func DefaultLiveMemoryMiB() int {
	total, ok := procmem.Machine("MemTotal:")
	if !ok {
		return 1024
	}
	return int(total >> 20 / 8)
}

// DefaultSparesMax is the most spares by default: half of the memory
// bound's worth (spares count against it, and the conversations they
// become need the other half), at most eight per core, whose starts,
// about 0.7 s of CPU each, are made one after another in idle time.
func DefaultSparesMax(liveMemoryMiB int) int {
	return max(1, min(liveMemoryMiB/2/(gateway.SpareMemory>>20), 8*runtime.NumCPU()))
}

// Chosen says which of the spare flags were set, by flag or environment.
type Chosen struct{ Fixed, Min, Max bool }

// settleSpares gives the spare bounds: --spares fixes the ones not set on
// their own, and --spares-max defaults from the memory bound.
func settleSpares(cfg Config) (lo, hi int) {
	lo, hi = cfg.SparesMin, cfg.SparesMax
	if !cfg.SparesChosen.Max {
		hi = DefaultSparesMax(cfg.LiveMemoryMiB)
	}
	if cfg.SparesChosen.Fixed {
		if !cfg.SparesChosen.Min {
			lo = cfg.Spares
		}
		if !cfg.SparesChosen.Max {
			hi = cfg.Spares
		}
	}
	return max(lo, 0), max(hi, 0)
}

// Run assembles the gateway (database, claude driver, gateway, stored
// responses, HTTP server) and serves until ctx ends.
func Run(ctx context.Context, cfg Config, environ []string, logTo io.Writer) error {
	logs := logring.New(0)
	log, err := newLogger(cfg.LogLevel, cfg.LogFormat, io.MultiWriter(logTo, logs))
	if err != nil {
		return err
	}
	for _, n := range cfg.StartNotes {
		log.Warn(n)
	}
	if cfg.Port < 0 || cfg.Port > 65535 {
		return fmt.Errorf("--port %d: out of range", cfg.Port)
	}
	if cfg.MaxConcurrent < 1 {
		return fmt.Errorf("--max-concurrent %d: must be at least 1", cfg.MaxConcurrent)
	}
	accounts, err := accountsMode(cfg.Accounts, cfg.MoveAt)
	if err != nil {
		return err
	}
	cfg.Capture = cmp.Or(cfg.Capture, capture.Off)
	if err := capture.CheckMode(cfg.Capture, false); err != nil {
		return err
	}
	if cfg.CaptureMaxMiB < 0 || cfg.CaptureMaxAge < 0 {
		return errors.New("--capture-max-age and --capture-max-mib bound the captures kept: 0 for the default, else positive")
	}
	alertAt, err := thresholds(cfg.AlertAt)
	if err != nil {
		return err
	}
	noLive := cfg.MaxLive == 0
	if noLive {
		cfg.MaxLive = cfg.MaxConcurrent // processes still run during their turns
	}
	concurrent, err := settleConcurrency(cfg.MaxConcurrent, cfg.MaxLive, cfg.MaxConcurrentChosen)
	if err != nil {
		return err
	}
	if concurrent != cfg.MaxConcurrent {
		log.Info("running at most --max-live turns at once: every running turn needs a live process", "max_concurrent", concurrent, "max_live", cfg.MaxLive)
		cfg.MaxConcurrent = concurrent
	}
	addr := net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port))
	// The CLI runs in a workspace of its own, so it never sees the
	// directory meridian happened to be started in.
	workspace := filepath.Join(cfg.DataDir, "workspace")

	if err := httpapi.CheckExposure(addr, cfg.APIKey); err != nil {
		return err
	}
	if err := checkAdvertise(cfg.Advertise, cfg.Host, cfg.Store); err != nil {
		return err
	}
	host, err := cluster.HostID(cfg.DataDir)
	if err != nil {
		return err
	}
	log = log.With("host", host)
	sweepSessionFolders(cfg.DataDir, log)
	st, err := openStores(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer st.close()
	db := st.shared
	// The heartbeat comes before anything records this process as an
	// owner, and goes last: the server and its jobs are done by then.
	hosts := cluster.New(cluster.Config{Hosts: db.Hosts, Host: host, Addr: addr, Version: cfg.Version, Expiry: cfg.HostExpiry,
		Logger: log.With("component", "cluster")})
	if err := hosts.Start(ctx); err != nil {
		return fmt.Errorf("%s store at %s: %w", db.Engine, db.Where, err)
	}
	defer hosts.Close()

	// One gateway per profile, each with its own CLI environment, live
	// processes and spares; requests name one or get the default.
	var agyTools *agy.Endpoints
	if cfg.Backend == BackendAntigravity || cfg.Backend == BackendCombined {
		agyTools = agy.NewEndpoints(log.With("component", "agy-tools"))
	}
	var codexTools *toolhost.Registry
	if cfg.Backend == BackendCodex || cfg.Backend == BackendCombined {
		codexTools = toolhost.NewRegistry()
	}
	chosen, err := chooseBackend(cfg, addr, backendTools{agy: agyTools, codex: codexTools}, log)
	if err != nil {
		return err
	}
	sparesMin, sparesMax := settleSpares(cfg)
	// One session tree for every gateway (a subagent may run under another
	// profile than its lead); on a shared store its cancels reach the other
	// hosts.
	tree := sessiontree.New()
	var cascade gateway.Cascade
	if db.Engine != "sqlite" {
		c := cluster.NewCascade(tree, db.Signals, log.With("component", "cluster"))
		defer c.Close()
		cascade = c
	}
	newGateway := func(cli *cli, name string, env []string) *gateway.Gateway {
		driver := cli.driver(name, env)
		var shared gateway.Transcripts
		if db.Engine != "sqlite" && cli.names.Backend != BackendAntigravity {
			// Other hosts resume this host's conversations from the
			// transcripts its CLI writes (on one machine they are there).
			shared = &transcripts.Shared{Keeper: db.Conversations, Profile: name, ConfigDir: transcripts.ConfigDir(env),
				Log: log.With("component", "transcripts", "profile", name)}
		}
		return gateway.New(gateway.Config{
			Tree:          tree,
			Cascade:       cascade,
			Transcripts:   shared,
			Profile:       name,
			Backend:       driver,
			Inspector:     driver,
			CLI:           cli.names,
			Workspace:     workspace,
			MaxConcurrent: cfg.MaxConcurrent,
			QueueTimeout:  cfg.QueueTimeout,
			Sessions:      session.NewStore(db.Conversations, nil).HeldBy(hosts.Self()),
			Leases:        session.NewLeases(db.Leases, hosts, 0, log.With("component", "session")),
			TurnWait:      cfg.TurnWait,
			MaxLive:       cfg.MaxLive,
			IdleTTL:       cfg.IdleTTL,
			NoLive:        noLive,
			StallTimeout:  cfg.StallTimeout,
			LiveMemory:    int64(cfg.LiveMemoryMiB) << 20,
			OneOffTTL:     cfg.OneOffTTL,
			SparesMin:     sparesMin,
			SparesMax:     sparesMax,
			SpareCPU:      cfg.SpareCPU / 100,
			Starts:        db.Starts,
			FreezeIdle:    cfg.FreezeIdle,
			Logger:        log.With("component", "gateway", "profile", name),
		})
	}
	profiles, err := startProfiles(cfg.DataDir, environ, chosen.profiles, func(name string, env []string) *gateway.Gateway {
		return newGateway(chosen, name, env)
	}, log.With("component", "profiles"))
	if err != nil {
		return err
	}
	defer profiles.close()
	// Under combined, the other CLIs' gateways: each its own processes,
	// admission and limits, mounted under its prefix, and the backend of
	// the models of its vendor.
	var others []mounted
	if cfg.Backend == BackendCombined {
		agyCLI, err := antigravityCLI(cfg, agyTools, log)
		if err != nil {
			return err
		}
		codex := codexCLI(cfg, codexTools, log)
		for _, o := range []struct {
			cli    *cli
			prefix string
			owner  string
		}{{agyCLI, AntigravityPrefix, "google"}, {codex, CodexPrefix, "openai"}} {
			gw := newGateway(o.cli, o.cli.names.Backend, environ)
			defer gw.Close()
			o.cli.announce(environ, profile.Profile{})
			others = append(others, mounted{gw: gw, prefix: o.prefix, owner: o.owner})
		}
	}
	// Every gateway the metrics count: the profiles' as they stand now,
	// and the other CLIs' under combined.
	gateways := func() []*gateway.Gateway {
		gws := profiles.gateways()
		for _, o := range others {
			gws = append(gws, o.gw)
		}
		return gws
	}
	gw, prof := profiles.def.gw, profiles.def.p
	if prof.Name != profile.DefaultName {
		log.Info("requests that name no profile run under profile "+prof.Name, "profile", prof.Name, "kind", prof.Kind)
	}
	stored, err := responses.Open(ctx, db, hosts, responses.Config{MaxCount: cfg.MaxStored, MaxBytes: cfg.MaxStoredBytes})
	if err != nil {
		return err
	}
	key, err := stored.SealKey(ctx)
	if err != nil {
		return err
	}
	sealer, err := openai.NewSealer(key)
	if err != nil {
		return err
	}
	settings, err := config.Load(cfg.ConfigPath)
	if err != nil {
		return err
	}
	aliases, err := aliasBook(db.Aliases, settings.Aliases)
	if err != nil {
		return err
	}
	requestHooks, err := openHooks(ctx, settings.Hooks, cfg.DataDir, environ, log.With("component", "hooks"))
	if err != nil {
		return err
	}
	// After the server: observers of the last streams finish.
	defer func() { _ = requestHooks.Close(context.WithoutCancel(ctx)) }()
	tel, err := openTelemetry(db, st.local, hosts, host, cfg, settings, gateways, log)
	if err != nil {
		return err
	}
	defer tel.history.Close() // after the server: the last records are written
	lim := answers.DefaultLimits()
	notifier := alerts.New(alerts.Config{Store: db.Alerts, Host: host, Thresholds: alertAt, Logger: log.With("component", "alerts")})
	tracer, stopTracing, err := otlp.Open(ctx, otlp.Config{Endpoint: cfg.OTLPEndpoint, Env: envMap(environ), Version: cfg.Version, Host: host})
	if err != nil {
		return err
	}
	defer func() {
		// After the server: the last spans are sent, within a bound.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := stopTracing(sctx); err != nil {
			log.Warn("tracing: could not send the last spans", "err", err)
		}
	}()
	if tracer != nil {
		log.Info("sending each model request's trace over OTLP/HTTP", "endpoint", cmp.Or(cfg.OTLPEndpoint, "from OTEL_EXPORTER_OTLP_*"))
	}
	captures := inspector.Open(inspector.Config{Store: db.Captures, Host: host, MaxAge: cfg.CaptureMaxAge, MaxBytes: int64(cfg.CaptureMaxMiB) << 20,
		Redactor: capture.NewRedactor(cfg.APIKey, cfg.ClusterKey), Logger: log.With("component", "inspector")})
	defer captures.Close() // after the server: the last captures are written
	crashes, err := crashreport.New(cfg.CrashDSN, cfg.Version, log.With("component", "crashreport"))
	if err != nil {
		return err
	}
	defer crashes.Close() // after the server: reports being sent finish
	if err := crashes.WatchFatal(filepath.Join(cfg.DataDir, "crash-output.txt")); err != nil {
		log.Warn("a fatal crash of this run will not be reported", "err", err)
	}
	newer, waitNewer := newerRelease(ctx, cfg, environ, log)
	defer waitNewer()
	// What both servers on this listener share: the listener's settings,
	// who may call, the hosts and the telemetry. Each has its own
	// dispatcher (saved answers, journal) and background jobs.
	base := httpapi.Config{
		Listen: httpapi.Listen{Addr: addr, MaxBodyBytes: cfg.MaxBodyBytes, BodyTimeout: cfg.BodyTimeout, DrainTimeout: cfg.DrainTimeout,
			PingInterval: cfg.PingInterval, Hurry: cfg.Hurry, Version: cfg.Version, AllowedHosts: splitList(cfg.AllowedHosts), NewerRelease: newer},
		Access: httpapi.Access{AdminKey: cfg.APIKey, Keys: db.Keys, BudgetCrossed: budgetAlerts(notifier)},
		Hooks:  requestHooks,
		Hosts:  httpapi.Hosts{Host: host, Cluster: hosts, StoreEngine: db.Engine, StoreAt: db.Where},
		Telemetry: httpapi.Telemetry{History: tel.history, Metrics: tel.metrics, Prices: tel.prices, Logs: logs, Alerts: notifier,
			Inspector: captures, Capture: cfg.Capture, Tracer: tracer, Crashes: crashes, TestPanic: cfg.TestPanic},
	}
	models := func(def *gateway.Gateway, profiles []httpapi.Profile, failover bool, peers dispatch.Hosts, watch dispatch.Watcher, log *slog.Logger) httpapi.Models {
		return httpapi.Models{AnswerBytes: lim.EntryBytes, Aliases: aliases, Dispatch: dispatch.New(dispatch.Config{Default: def, Profiles: profiles,
			Failover: failover, Accounts: accounts, MoveAt: cfg.MoveAt / 100, Answers: answers.New(db.Answers, lim, nil), Journal: journal.New(db.Journal, hosts, 0, 0, nil).Notifying(db.Signals),
			Bench: db.Bench, Figures: db.Figures, Watch: watch, Hosts: peers, Logger: log})}
	}
	var mounts []httpapi.Mount
	for _, o := range others {
		// That CLI's own server on this listener: its own admission,
		// processes, saved answers and background jobs.
		jobs := responses.NewJobs(responses.JobsConfig{Max: cfg.MaxBackground, Store: stored, Logger: log.With("component", "responses")})
		defer jobs.Close()
		sub := base
		sub.Logger = log.With("component", "http", "backend", o.gw.CLI().Backend)
		sub.Responses = httpapi.Responses{Store: stored, Jobs: jobs, Sealer: sealer}
		sub.Models = models(o.gw, []httpapi.Profile{{Name: o.gw.CLI().Backend, Gateway: o.gw}}, false, nil, nil, sub.Logger)
		subSrv, err := httpapi.New(sub)
		if err != nil {
			return err
		}
		mounts = append(mounts, httpapi.Mount{Prefix: o.prefix, Handler: subSrv.Handler(), Gateway: o.gw, Owner: o.owner})
	}
	var open []httpapi.Mount
	if agyTools != nil {
		open = append(open, httpapi.Mount{Prefix: agyToolsPrefix, Handler: agyTools})
	}
	if codexTools != nil {
		open = append(open, httpapi.Mount{Prefix: codexToolsPrefix, Handler: codexTools})
	}
	front := base
	front.Logger = log.With("component", "http")
	front.Hosts.Key, front.Hosts.Peers = cfg.ClusterKey, hosts
	front.Responses = httpapi.Responses{Store: stored, Sealer: sealer,
		Jobs: responses.NewJobs(responses.JobsConfig{Max: cfg.MaxBackground, Store: stored, Logger: log.With("component", "responses")})}
	front.Models = models(gw, profiles.http(), cfg.Failover, hosts, notifier, front.Logger)
	front.Mounts, front.Open = mounts, open
	con, closeConsole := openConsole(ctx, db, cfg.DataDir, CLIPaths{Claude: cfg.ClaudePath, Codex: cfg.CodexPath}, environ)
	defer closeConsole() // after the server: a login under way is ended and its CLI joined
	front.Console = con
	srv, err := httpapi.New(front)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(workspace, 0o700); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	ln, err := srv.Listen()
	if errors.Is(err, syscall.EADDRINUSE) {
		return portTaken(ctx, cfg, err)
	}
	if err != nil {
		return err
	}
	if agyTools != nil {
		agyTools.SetBase(selfURL(ln.Addr()) + agyToolsPrefix)
	}
	if codexTools != nil {
		codexTools.SetBase(selfURL(ln.Addr()) + codexToolsPrefix)
	}
	// The other hosts learn where this one listens, and its load.
	hosts.Report(srv.Counts)
	if err := hosts.Advertise(ctx, advertised(cfg.Advertise, ln.Addr())); err != nil {
		log.Warn("store: could not advertise this host's address; its next beat does", "err", err)
	}
	chosen.announce(environ, prof)
	if cfg.ClusterKey == "" && db.Engine != "sqlite" {
		log.Info("no --cluster-key: this host answers every turn it receives itself, so a conversation whose turns reach several hosts resumes or replays on each")
	}
	log.Info("meridian listening", "addr", ln.Addr().String(), "version", cfg.Version, "data_dir", cfg.DataDir, "store", db.Engine, "store_at", db.Where,
		"max_concurrent", cfg.MaxConcurrent, "max_live", cfg.MaxLive, "idle_ttl", cfg.IdleTTL, "api_key", cfg.APIKey != "")
	if cfg.Welcome {
		welcome(logTo, ln.Addr().String(), cfg.Backend)
	}
	// Transcripts of forked-away sessions are deleted in the background,
	// joined before Run returns.
	cleaner := transcriptCleaner(cfg, profiles, db.Conversations, workspace, log)
	cleanCtx, stopCleaning := context.WithCancel(ctx)
	var cleaning sync.WaitGroup
	cleaning.Go(func() { cleaner.Run(cleanCtx, transcripts.DefaultEvery) })
	cleaning.Go(func() { notifier.Run(cleanCtx) })
	probe := &idleProbe{profiles: profiles, dispatch: front.Models.Dispatch, log: log.With("component", "accounts"), now: time.Now}
	cleaning.Go(func() { probe.run(cleanCtx) })
	defer cleaning.Wait()
	defer stopCleaning()
	// `meridian profile add`, `remove` and `default` reach a running
	// serve: the profile list is watched and served as it changes.
	cleaning.Go(func() {
		if err := profiles.watch(cleanCtx, srv.SetProfiles); err != nil {
			log.Warn("profile changes reach meridian only at its next start", "err", err)
		}
	})
	return srv.Serve(ctx, ln)
}

func newLogger(level, format string, w io.Writer) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: l}
	var h slog.Handler
	switch format {
	case "text":
		h = slog.NewTextHandler(w, opts)
	case "json":
		h = slog.NewJSONHandler(w, opts)
	case "terminal":
		h = termlog.New(w, opts)
	default:
		return nil, fmt.Errorf("--log-format %q: want text, json or terminal", format)
	}
	// A request's lines carry its id (reqid), when logged with its context.
	return slog.New(reqid.Handler{Handler: h}), nil
}

// splitList reads a comma-separated setting: its items, trimmed, without
// empty ones.
func splitList(v string) []string {
	var out []string
	for item := range strings.SplitSeq(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
