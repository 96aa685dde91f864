package httpapi_test

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/meridian-gw/meridian/internal/answers"
	"github.com/meridian-gw/meridian/internal/backend/claude"
	"github.com/meridian-gw/meridian/internal/cluster"
	"github.com/meridian-gw/meridian/internal/dispatch"
	"github.com/meridian-gw/meridian/internal/gateway"
	"github.com/meridian-gw/meridian/internal/hooks"
	"github.com/meridian-gw/meridian/internal/httpapi"
	"github.com/meridian-gw/meridian/internal/inspector"
	"github.com/meridian-gw/meridian/internal/journal"
	"github.com/meridian-gw/meridian/internal/logring"
	"github.com/meridian-gw/meridian/internal/metrics"
	"github.com/meridian-gw/meridian/internal/openai"
	"github.com/meridian-gw/meridian/internal/pricing"
	"github.com/meridian-gw/meridian/internal/responses"
	"github.com/meridian-gw/meridian/internal/session"
	"github.com/meridian-gw/meridian/internal/store"
	"github.com/meridian-gw/meridian/internal/store/sqlite/sqlitetest"
	"github.com/meridian-gw/meridian/internal/telemetry/history"
	"github.com/meridian-gw/meridian/internal/testkit"
	"github.com/meridian-gw/meridian/internal/tracing"
)

// stack is a running meridian: real claude CLI, fake upstream, the HTTP
// server on a loopback port.
type stack struct {
	URL      string
	Upstream *testkit.Upstream
	Marker   string // finds the CLI processes this stack started
	Gateway  *gateway.Gateway
	DataDir  string
	History  *history.History // with telemetry
	env      []string
	stop     func() // stops the server and joins everything; also run at cleanup
}

type stackOptions struct {
	claudePath    string   // default: the pinned real CLI
	env           []string // extra CLI environment
	apiKey        string
	maxConcurrent int
	queueTimeout  time.Duration
	maxBodyBytes  int64
	pingInterval  time.Duration
	// allowedHosts are host names taken besides loopback ones.
	allowedHosts []string
	drainTimeout time.Duration
	stallTimeout time.Duration
	spares       int
	sparesMax    int // more spares after a burst (at least spares)
	launcher     claude.Launcher
	graces       claude.Config // InterruptGrace, ExitGrace, KillGrace

	// sessions makes conversations durable (SQLite in the data dir).
	sessions bool
	// telemetry keeps the request history and /metrics.
	telemetry bool
	// tracer traces each model request; capture keeps them for the
	// request inspector (with sessions: in the data dir's store).
	tracer   tracing.Provider
	capture  string
	turnWait time.Duration
	leaseTTL time.Duration
	// maxWaiters bounds one conversation's waiting turns (0: the default).
	maxWaiters int
	maxLive    int
	noLive     bool
	// share runs this stack as another meridian process beside an
	// existing one: same upstream, CLI config dir and data dir.
	share *stack
	// responses bounds the response store (with sessions); maxJobs and
	// logBytes the background runs.
	responses responses.Config
	maxJobs   int
	logBytes  int
	// answers bounds the saved answers (zero: the defaults); noAnswers
	// runs without them.
	answers   answers.Limits
	noAnswers bool
	// console wires the operator's console over the store's keys and the
	// data dir's profiles.
	console bool
	// hooks are the operator's request hooks.
	hooks []hooks.Spec
}

func newStack(t testing.TB, o stackOptions) *stack {
	t.Helper()
	if o.claudePath == "" {
		o.claudePath = testkit.ClaudePath(t)
	}
	var up *testkit.Upstream
	var env []string
	var marker, dataDir string
	if o.share != nil {
		up, env, marker, dataDir = o.share.Upstream, o.share.env, o.share.Marker, o.share.DataDir
	} else {
		up = testkit.NewUpstream(t)
		env, marker = testkit.ClaudeEnv(t, up.URL)
		env = append(env, o.env...)
		dataDir = t.TempDir()
	}
	log := testLogger(t)
	driver := claude.New(claude.Config{
		Path: o.claudePath, Env: env, Launcher: o.launcher, Logger: log,
		InterruptGrace: o.graces.InterruptGrace, ExitGrace: o.graces.ExitGrace, KillGrace: o.graces.KillGrace,
	})
	cfg := gateway.Config{
		Backend:       driver,
		Inspector:     driver,
		Workspace:     filepath.Join(dataDir, "workspace"),
		MaxConcurrent: o.maxConcurrent,
		QueueTimeout:  o.queueTimeout,
		TurnWait:      o.turnWait,
		MaxLive:       o.maxLive,
		NoLive:        o.noLive,
		StallTimeout:  o.stallTimeout,
		SparesMin:     o.spares,
		SparesMax:     max(o.spares, o.sparesMax),
		Logger:        log,
	}
	if err := os.MkdirAll(cfg.Workspace, 0o700); err != nil {
		t.Fatal(err)
	}
	st, owners := openStore(t, dataDir)
	if o.sessions {
		cfg.Sessions = session.NewStore(st.Conversations, nil)
		cfg.Leases = session.NewLeases(st.Leases, owners, o.leaseTTL, log)
		cfg.Leases.MaxWaiters = o.maxWaiters
	}
	gw := gateway.New(cfg)
	hcfg := httpapi.Config{
		Listen: httpapi.Listen{Addr: "127.0.0.1:0", MaxBodyBytes: o.maxBodyBytes, PingInterval: o.pingInterval,
			DrainTimeout: o.drainTimeout, Version: "test", AllowedHosts: o.allowedHosts},
		Access: httpapi.Access{AdminKey: o.apiKey},
		Hosts:  httpapi.Hosts{Host: "test-host"},
		Logger: log,
	}
	dcfg := dispatch.Config{Default: gw, Logger: log}
	if o.sessions {
		hcfg.Responses.Store, hcfg.Responses.Sealer = openResponses(t, dataDir, o.responses)
		dcfg.Journal = journal.New(st.Journal, owners, 0, 0, nil)
	}
	hcfg.Responses.Jobs = responses.NewJobs(responses.JobsConfig{Max: o.maxJobs, LogBytes: o.logBytes, Store: hcfg.Responses.Store, Logger: log})
	if !o.noAnswers {
		lim := answers.DefaultLimits()
		if o.answers != (answers.Limits{}) {
			lim = o.answers
		}
		dcfg.Answers, hcfg.Models.AnswerBytes = answers.New(st.Answers, lim, nil), lim.EntryBytes
	}
	hcfg.Models.Dispatch = dispatch.New(dcfg)
	var hist *history.History
	if o.telemetry {
		hist = history.Open(st.Telemetry, "test-host", history.Limits{}, log, nil)
		t.Cleanup(hist.Close) // after the server has stopped (cleanups run last first)
		tel := &hcfg.Telemetry
		tel.History, tel.Logs = hist, logring.New(0)
		tel.Prices, _ = pricing.New(map[string]pricing.Price{"test-model": {Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75}})
		tel.Metrics = metrics.New(func(context.Context) metrics.Load {
			b := gw.Load()
			return metrics.Load{Running: b.Running, Queued: b.Queued, Slots: b.Slots, Live: b.Live, Idle: b.Idle, Spares: b.Spares,
				IdleMemory: b.IdleMemory, Memory: b.Memory}
		})
	}
	hcfg.Telemetry.Tracer = o.tracer
	if o.console {
		hcfg.Access.Keys, hcfg.Console = st.Keys, newConsole(t, st, dataDir)
	}
	if o.capture != "" {
		in := inspector.Open(inspector.Config{Store: st.Captures, Host: "test-host"})
		t.Cleanup(in.Close)
		hcfg.Telemetry.Inspector, hcfg.Telemetry.Capture = in, o.capture
	}
	if len(o.hooks) > 0 {
		h, err := hooks.Open(context.Background(), hooks.Config{Specs: o.hooks, Environ: os.Environ(), Logger: log})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = h.Close(context.Background()) }) // after the server has stopped
		hcfg.Hooks = h
	}
	srv, err := httpapi.New(hcfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := srv.Listen()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("serve: %v", err)
			}
			gw.Close()
		})
	}
	t.Cleanup(func() {
		stop()
		// Every CLI process the stack started is joined by now.
		if o.share == nil {
			if pids := testkit.Processes(marker); len(pids) > 0 {
				t.Errorf("claude processes outlived the server: %v", pids)
			}
		}
	})
	return &stack{URL: "http://" + ln.Addr().(*net.TCPAddr).String(), Upstream: up, Marker: marker, Gateway: gw,
		DataDir: dataDir, History: hist, env: env, stop: stop}
}

// openStore opens the store in a data dir as one meridian process does,
// with its heartbeat, closed when the test ends.
func openStore(t testing.TB, dataDir string) (*store.Store, *cluster.Registry) {
	t.Helper()
	st := sqlitetest.OpenIn(t, dataDir)
	owners := cluster.New(cluster.Config{Hosts: st.Hosts, Host: "test-host"})
	if err := owners.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(owners.Close)
	return st, owners
}

// openResponses opens the response store in a data dir, with its sealer.
func openResponses(t testing.TB, dataDir string, cfg responses.Config) (*responses.Store, *openai.Sealer) {
	t.Helper()
	st, owners := openStore(t, dataDir)
	rs, err := responses.Open(context.Background(), st, owners, cfg)
	if err != nil {
		t.Fatal(err)
	}
	key, err := rs.SealKey(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	sealer, err := openai.NewSealer(key)
	if err != nil {
		t.Fatal(err)
	}
	return rs, sealer
}

// client returns an official SDK client for the stack, without SDK retries
// so that status codes reach the test as they are.
func (s *stack) client(opts ...option.RequestOption) *sdk.Client {
	c := sdk.NewClient(append([]option.RequestOption{
		option.WithBaseURL(s.URL),
		option.WithAPIKey("client-key"),
		option.WithMaxRetries(0),
		option.WithHTTPClient(&http.Client{Timeout: 60 * time.Second}),
	}, opts...)...)
	return &c
}

func testLogger(t testing.TB) *slog.Logger {
	if os.Getenv("MERIDIAN_TEST_LOG") == "" {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).With("test", t.Name())
}

func userMessage(text string) sdk.MessageParam {
	return sdk.NewUserMessage(sdk.NewTextBlock(text))
}

func simpleParams(text string) sdk.MessageNewParams {
	return sdk.MessageNewParams{Model: "test-model", MaxTokens: 100, Messages: []sdk.MessageParam{userMessage(text)}}
}

func countParams(text string) sdk.MessageCountTokensParams {
	return sdk.MessageCountTokensParams{Model: "test-model", Messages: []sdk.MessageParam{userMessage(text)}}
}

func sdkModelListParams() sdk.ModelListParams { return sdk.ModelListParams{} }
func sdkModelGetParams() sdk.ModelGetParams   { return sdk.ModelGetParams{} }
