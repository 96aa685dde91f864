// Package httpapi is Meridian's HTTP front: the only package that binds a
// listener. It routes requests, guards them (API key, browser origins, body
// size), decodes protocol bodies and renders the gateway's responses as
// JSON or SSE.
package httpapi

import (
	"cmp"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"time"

	"github.com/meridian-gw/meridian/internal/answers"
	"github.com/meridian-gw/meridian/internal/apikeys"
	"github.com/meridian-gw/meridian/internal/capture"
	"github.com/meridian-gw/meridian/internal/console"
	"github.com/meridian-gw/meridian/internal/crashreport"
	"github.com/meridian-gw/meridian/internal/dispatch"
	"github.com/meridian-gw/meridian/internal/forward"
	"github.com/meridian-gw/meridian/internal/gateway"
	"github.com/meridian-gw/meridian/internal/hooks"
	"github.com/meridian-gw/meridian/internal/inspector"
	"github.com/meridian-gw/meridian/internal/logring"
	"github.com/meridian-gw/meridian/internal/metrics"
	"github.com/meridian-gw/meridian/internal/modelalias"
	"github.com/meridian-gw/meridian/internal/openai"
	"github.com/meridian-gw/meridian/internal/pricing"
	"github.com/meridian-gw/meridian/internal/reqid"
	"github.com/meridian-gw/meridian/internal/responses"
	"github.com/meridian-gw/meridian/internal/telemetry"
	"github.com/meridian-gw/meridian/internal/telemetry/history"
	"github.com/meridian-gw/meridian/internal/tracing"
	"github.com/meridian-gw/meridian/internal/web"
)

// Config configures a Server, in parts by concern.
type Config struct {
	Listen    Listen
	Access    Access
	Models    Models
	Responses Responses
	Hosts     Hosts
	Telemetry Telemetry
	// Mounts serve other backends' routes under a path prefix on this
	// server's listener (--backend combined: /antigravity/…).
	Mounts []Mount
	// Open are handlers that authenticate their own callers (agy
	// sessions' tool endpoints, by a secret in the path): they pass the
	// host and origin guards but need no API key, are not logged (their
	// paths hold the secret) and are not drained (agy holds a stream open
	// on them for as long as it runs).
	Open []Mount
	// Hooks are the operator's request hooks, run on each model request
	// and its answer (nil: none).
	Hooks *hooks.Hooks
	// Console makes the operator's changes from the console's pages and
	// the admin JSON routes; nil: those answer 404.
	Console *console.Console
	Logger  *slog.Logger
}

// Listen is where the server listens and how it treats a connection.
type Listen struct {
	// Addr is host:port to listen on.
	Addr string
	// MaxBodyBytes bounds a request body; larger bodies get 413.
	// BodyTimeout bounds how long it may take to arrive; slower ones get
	// 408 (0: DefaultBodyTimeout).
	MaxBodyBytes int64
	BodyTimeout  time.Duration
	// PingInterval paces SSE pings on quiet streams.
	PingInterval time.Duration
	// DrainTimeout bounds how long shutdown waits for running requests
	// before cancelling them; Hurry, when it closes, ends the wait at once
	// (a second signal).
	DrainTimeout time.Duration
	Hurry        <-chan struct{}
	// Version is reported by GET / and the pages.
	Version string
	// NewerRelease names a newer release than this one, for the landing
	// page ("" or nil: none known).
	NewerRelease func() string
	// AllowedHosts are host names taken besides loopback ones on a
	// loopback listener (a name a reverse proxy or /etc/hosts gives this
	// machine), and whose pages' origins are taken too.
	AllowedHosts []string
}

// Access is who may call.
type Access struct {
	// AdminKey, when set, is required on every route but the probes, and
	// is the only key the pages and admin routes take.
	AdminKey string
	// Keys, when set, are the keys of people and tools, each with its
	// scope and limits, shared by every host on the store: once one
	// exists, the model routes need one of them (or the admin key).
	Keys apikeys.Keys
	// BudgetCrossed hears of a key's spend crossing its alert mark or
	// its budget (nil: nobody).
	BudgetCrossed func(apikeys.BudgetCrossing)
}

// Models is who answers the model requests.
type Models struct {
	// Dispatch chooses the profile of each request and keeps the saved
	// answers and the journal that make retries safe.
	Dispatch *dispatch.Dispatcher
	// AnswerBytes is the largest answer saved for a retry.
	AnswerBytes int
	// Aliases map the model names clients send to the models that
	// answer them; nil: none.
	Aliases *modelalias.Book
}

// Responses are the Responses API's stored and background responses.
type Responses struct {
	// Store keeps stored responses, Jobs runs background ones, and Sealer
	// seals the reasoning handed to clients. Without Store nothing is
	// stored and background responses are refused.
	Store  *responses.Store
	Jobs   *responses.Jobs
	Sealer *openai.Sealer
}

// Hosts is this meridian among those sharing its store.
type Hosts struct {
	// Host is this meridian's host id, shown by /health, /inflight and the
	// pages; Cluster knows the meridians sharing the store (nil: this one
	// alone). StoreEngine and StoreAt name the store for /health.
	Host                 string
	Cluster              Cluster
	StoreEngine, StoreAt string
	// Key, when set, sends each conversation's turns to the host that
	// holds it (Peers tells which hosts are alive) and admits the
	// requests other hosts forward with it.
	Key   string
	Peers dispatch.Hosts
}

// Telemetry is what the server records and shows of its work.
type Telemetry struct {
	// History keeps a record of each model request, Metrics counts them
	// for /metrics, Prices estimates their cost and Logs holds the recent
	// log lines; any may be nil (then that page answers 404).
	History *history.History
	Metrics *metrics.Metrics
	Prices  *pricing.Table
	Logs    *logring.Ring
	// Alerts are the alerts sent to the operator, listed on /providers;
	// nil lists none.
	Alerts AlertLog
	// Inspector keeps the model requests captured (nil: none, and the
	// inspector pages answer 404); Capture is the mode of requests whose
	// key sets none (capture.Off, Metadata or Content).
	Inspector *inspector.Inspector
	Capture   string
	// Tracer sends each model request's trace (nil: none).
	Tracer tracing.Provider
	// Crashes reports a handler's panic (nil: none are sent); TestPanic,
	// for tests only, serves GET /test/panic, which panics.
	Crashes   *crashreport.Reporter
	TestPanic bool
}

// Mount is another server's handler under Prefix ("/antigravity"): a
// request for Prefix+"/v1/messages" reaches it as "/v1/messages". Gateway,
// when set, is the backend it serves, shown on this server's pages beside
// the profiles with its own figures. Owner, when set, is the vendor
// whose models it answers ("openai", "google"): a model request on this
// server's own routes naming one of them is served by it.
type Mount struct {
	Prefix  string
	Handler http.Handler
	Gateway *gateway.Gateway
	Owner   string
}

// Defaults for Config.
const (
	DefaultMaxBodyBytes = 32 << 20
	DefaultPingInterval = 15 * time.Second
	DefaultDrainTimeout = 30 * time.Second
)

// Server serves the gateway over HTTP.
type Server struct {
	cfg     Config
	log     *slog.Logger
	handler http.Handler
	pages   *web.Pages
	// dispatch chooses who answers each model request, and keeps what
	// makes retries safe.
	dispatch  *dispatch.Dispatcher
	access    access
	backends  backends
	site      pageRoutes
	usage     usageRoutes
	info      infoRoutes
	bodies    bodies
	stored    storedResponses
	telemetry telemetryRoutes
	cluster   clusterRoutes
	sessions  sessionRoutes
	inspector inspectorRoutes
	admin     adminRoutes
	console   consoleRoutes
	// gate admits requests until the drain begins and counts those
	// running: Serve returns after the last, or lastWait after cancelling
	// them.
	gate     gate
	lastWait time.Duration
	// paused refuses new turns until resumed.
	paused pause
	// forwarder sends a conversation's turns to the host that holds it.
	forwarder *forward.Forwarder
	// aliases map the model names clients send to the models answering.
	aliases *modelalias.Book
}

// New returns a Server. It refuses to expose a non-loopback address
// without an API key.
func New(cfg Config) (*Server, error) {
	l := &cfg.Listen
	if l.MaxBodyBytes <= 0 {
		l.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if l.BodyTimeout <= 0 {
		l.BodyTimeout = DefaultBodyTimeout
	}
	if l.PingInterval <= 0 {
		l.PingInterval = DefaultPingInterval
	}
	if l.DrainTimeout <= 0 {
		l.DrainTimeout = DefaultDrainTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Models.AnswerBytes <= 0 {
		cfg.Models.AnswerBytes = answers.DefaultLimits().EntryBytes
	}
	if cfg.Models.Dispatch == nil {
		return nil, errors.New("httpapi: no dispatcher: nothing would answer the model requests")
	}
	if cfg.Responses.Jobs == nil {
		cfg.Responses.Jobs = responses.NewJobs(responses.JobsConfig{})
	}
	if err := CheckExposure(l.Addr, cfg.Access.AdminKey); err != nil {
		return nil, err
	}
	pages, err := web.Parse()
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, log: cfg.Logger, pages: pages, gate: newGate(), lastWait: DefaultLastWait,
		dispatch: cfg.Models.Dispatch}
	s.backends = backends{dispatch: s.dispatch, mounted: mountedGateways(cfg.Mounts)}
	s.access = access{log: cfg.Logger}
	tel := cfg.Telemetry
	s.site = pageRoutes{pages: pages, version: l.Version, newer: l.NewerRelease, log: cfg.Logger, access: &s.access, backends: &s.backends,
		mounts: cfg.Mounts, history: tel.History, logs: tel.Logs, alerts: tel.Alerts}
	s.access.signInPage = s.site.signInPage
	s.usage = usageRoutes{keys: cfg.Access.Keys, access: &s.access, history: tel.History, telemetry: &s.telemetry, site: &s.site,
		backends: &s.backends, log: cfg.Logger}
	if a := cfg.Access; a.AdminKey != "" {
		s.access.admin, s.access.hasAdmin = digest(a.AdminKey), true
	}
	if keys := cfg.Access.Keys; keys != nil {
		s.access.keys, s.access.admission = apikeys.NewRing(keys), apikeys.NewAdmission(keys, cfg.Hosts.Host, cfg.Logger, cfg.Access.BudgetCrossed)
		s.access.prices = tel.Prices
	}
	h := cfg.Hosts
	s.aliases = cfg.Models.Aliases
	s.forwarder = forward.New(h.Key, h.Host, h.Peers, l.PingInterval, cfg.Logger)
	s.telemetry = telemetryRoutes{history: tel.History, metrics: tel.Metrics, logs: tel.Logs, log: cfg.Logger, load: s.backends.load}
	s.cluster = clusterRoutes{host: h.Host, store: h.StoreEngine, storeAt: h.StoreAt, cluster: h.Cluster, version: l.Version, chrome: s.site.chrome,
		pages: pages, log: cfg.Logger, load: s.backends.load, draining: s.gate.isClosed, paused: s.paused.on.Load}
	s.bodies = bodies{max: l.MaxBodyBytes, timeout: l.BodyTimeout}
	r := cfg.Responses
	s.stored = storedResponses{store: r.Store, jobs: r.Jobs, bodies: s.bodies, ping: l.PingInterval, log: cfg.Logger}
	s.admin = adminRoutes{console: cfg.Console, log: cfg.Logger}
	s.console = consoleRoutes{admin: &s.admin, site: &s.site, host: h.Host, csrf: s.access.admin, cluster: h.Cluster, peers: s.forwarder}
	if !s.access.hasAdmin {
		_, _ = rand.Read(s.console.csrf[:])
	}
	s.inspector = inspectorRoutes{inspector: tel.Inspector, mode: cmp.Or(tel.Capture, capture.Off), site: &s.site, log: cfg.Logger}
	s.info = infoRoutes{version: l.Version, host: h.Host, backends: &s.backends, cluster: &s.cluster, site: &s.site, aliases: s.aliases, log: cfg.Logger}
	s.sessions = sessionRoutes{profiles: s.dispatch, mounted: s.backends.mounted, host: h.Host, store: s.cluster.storeHealth, log: cfg.Logger}
	s.telemetry.tree = func() gateway.TreeGauges {
		return gateway.MergeInflight(append(s.sessions.profiles.Gateways(), s.sessions.mounted...)).Tree
	}
	s.handler = s.routes()
	return s, nil
}

// CheckExposure refuses a non-loopback address without an API key.
func CheckExposure(addr, apiKey string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen address %q: %w", addr, err)
	}
	if !isLoopbackHost(host) && apiKey == "" {
		return fmt.Errorf("refusing to listen on %s without an API key: anyone who can reach it could use your Claude account; set an admin key, --admin-key (or MERIDIAN_ADMIN_KEY), or listen on 127.0.0.1", addr)
	}
	return nil
}

// SetProfiles replaces the profiles the server answers with (a profile
// added, removed or made the default while meridian runs).
func (s *Server) SetProfiles(def *gateway.Gateway, profiles []Profile) {
	s.dispatch.SetProfiles(def, profiles)
}

// Handler returns the server's handler, middleware included.
func (s *Server) Handler() http.Handler { return s.handler }

// Listen binds the configured address.
func (s *Server) Listen() (net.Listener, error) {
	ln, err := net.Listen("tcp", s.cfg.Listen.Addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", s.cfg.Listen.Addr, err)
	}
	return ln, nil
}

// route is one pattern of the mux and what serves it.
type route struct {
	pattern string
	serve   http.HandlerFunc
}

// table is every route the server answers with a handler of its own.
func (s *Server) table() []route {
	t := []route{
		{"POST /v1/messages", s.messages},
		{"POST /messages", s.messages},
		{"POST /v1/messages/count_tokens", s.countTokens},
		{"POST /messages/count_tokens", s.countTokens},
		{"POST /v1/chat/completions", s.chatCompletions},
		{"POST /chat/completions", s.chatCompletions},
	}
	for _, prefix := range []string{"/v1", ""} {
		t = append(t,
			route{"POST " + prefix + "/responses", s.createResponse},
			route{"GET " + prefix + "/responses/{id}", s.stored.getResponse},
			route{"DELETE " + prefix + "/responses/{id}", s.stored.deleteResponse},
			route{"GET " + prefix + "/responses/{id}/input_items", s.stored.inputItems},
			route{"POST " + prefix + "/responses/{id}/cancel", s.stored.cancelResponse})
	}
	return append(t,
		route{"GET /v1/models", s.info.listModels},
		route{"GET /v1/models/{id}", s.info.getModel},
		route{"GET /v1/sessions", s.sessions.list},
		route{"GET /v1/sessions/{key...}", s.sessions.get},
		route{"POST /v1/sessions/{key}/cancel", s.sessions.cancel},
		route{"POST /v1/profiles/{name}/unbench", s.backends.unbench},
		route{"POST /v1/profiles/{name}/check", s.backends.check},
		route{"GET /inflight", s.sessions.inflight},
		route{"GET /v1/usage/quota", s.usage.quota},
		route{"GET /v1/usage/keys", s.usage.usageKeys},
		route{"GET /v1/usage/key", s.usage.usageOwnKey},
		route{"GET /health", s.info.health},
		route{"GET /ready", s.cluster.ready},
		route{"GET /cluster", s.cluster.hosts},
		route{"GET /metrics", s.telemetry.exposition},
		route{"GET /telemetry/summary", s.telemetry.summary},
		route{"GET /telemetry/requests", s.telemetry.requests},
		route{"GET /telemetry/logs", s.telemetry.lines},
		route{"GET /telemetry", s.site.dashboard},
		route{"GET /providers", s.site.providersPage},
		route{"GET /profiles", s.console.profilesPage(&s.backends)},
		route{"GET /panel", s.panel},
		route{"GET /panel/copy", s.panelCopy},
		route{"GET /admin", s.console.page},
		route{"POST /admin/keys", s.console.addKey},
		route{"POST /admin/keys/{name}/revoke", s.console.revokeKey},
		route{"POST /admin/keys/{name}/rotate", s.console.rotateKey},
		route{"POST /admin/profiles", s.console.addProfile},
		route{"POST /admin/profiles/{name}/settings", s.console.profileSettings},
		route{"POST /admin/profiles/{name}/default", s.console.defaultProfile},
		route{"POST /admin/profiles/{name}/remove", s.console.removeProfile},
		route{"POST /admin/profiles/{name}/login", s.console.startLogin},
		route{"POST /admin/profiles/{name}/unbench", s.console.unbench(&s.backends)},
		route{"POST /admin/profiles/{name}/check", s.console.check(&s.backends)},
		route{"GET /admin/logins/{id}", s.console.login},
		route{"POST /admin/logins/{id}/code", s.console.loginCode},
		route{"POST /admin/sinks", s.console.addSink},
		route{"POST /admin/sinks/{name}/remove", s.console.removeSink},
		route{"POST /admin/sinks/{name}/test", s.console.testSink},
		route{"POST /admin/aliases", s.console.addAlias},
		route{"POST /admin/aliases/{name}/remove", s.console.removeAlias},
		route{"GET /v1/admin/keys", s.admin.keys},
		route{"POST /v1/admin/keys", s.admin.addKey},
		route{"PATCH /v1/admin/keys/{name}", s.admin.setKey},
		route{"POST /v1/admin/keys/{name}/revoke", s.admin.revokeKey},
		route{"POST /v1/admin/keys/{name}/rotate", s.admin.rotateKey},
		route{"GET /v1/admin/profiles", s.admin.profiles},
		route{"POST /v1/admin/profiles", s.admin.addProfile},
		route{"PATCH /v1/admin/profiles/{name}", s.admin.setProfile},
		route{"DELETE /v1/admin/profiles/{name}", s.admin.removeProfile},
		route{"POST /v1/admin/profiles/{name}/login", s.admin.startLogin},
		route{"GET /v1/admin/logins/{id}", s.admin.login},
		route{"POST /v1/admin/logins/{id}/code", s.admin.loginCode},
		route{"GET /v1/admin/sinks", s.admin.sinks},
		route{"POST /v1/admin/sinks", s.admin.addSink},
		route{"DELETE /v1/admin/sinks/{name}", s.admin.removeSink},
		route{"POST /v1/admin/sinks/{name}/test", s.admin.testSink},
		route{"POST /v1/admin/pause", s.paused.set(true)},
		route{"POST /v1/admin/resume", s.paused.set(false)},
		route{"GET /v1/admin/aliases", s.admin.aliases},
		route{"POST /v1/admin/aliases", s.admin.addAlias},
		route{"DELETE /v1/admin/aliases/{name}", s.admin.removeAlias},
		route{"GET /inspector", s.inspector.list},
		route{"GET /inspector/requests", s.inspector.list},
		route{"GET /inspector/requests/{id}", s.inspector.one},
		route{"GET /inspector/{id}", s.inspector.one},
		route{"GET /providers/status", s.site.providersStatus},
		route{"POST /sign-in", s.site.signIn},
		route{"GET /key", s.usage.keyPage},
		route{"GET /{$}", s.info.root},
	)
}

// Routes are the patterns the server answers, for the documentation's
// own test: a route added without its row in the endpoint table fails it.
func Routes() []string {
	var s Server
	var out []string
	for _, r := range s.table() {
		out = append(out, r.pattern)
	}
	return out
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	for _, r := range s.table() {
		mux.HandleFunc(r.pattern, r.serve)
	}
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(web.Static())))
	for _, m := range s.cfg.Mounts {
		mux.Handle(m.Prefix+"/", http.StripPrefix(m.Prefix, m.Handler))
	}
	if s.cfg.Telemetry.TestPanic {
		mux.HandleFunc("GET /test/panic", func(http.ResponseWriter, *http.Request) {
			panic(fmt.Sprintf("a test panic holding a prompt %q and a path %s", "PROMPT-TEXT-NOT-TO-REPORT", os.TempDir()))
		})
		// A panic on a goroutine of its own ends the process.
		mux.HandleFunc("GET /test/crash", func(http.ResponseWriter, *http.Request) {
			go func() {
				var none []string
				_ = none[len(os.TempDir())]
			}()
			select {}
		})
	}
	mux.HandleFunc("/", s.notFound)
	h := s.track(s.recoverer(s.logRequests(s.guard(s.withHooks(s.paused.hold(s.backends.chooseProfile(s.byModel(mux))))))))
	if len(s.cfg.Open) == 0 {
		return s.boundUnreadBody(h)
	}
	outer := http.NewServeMux()
	for _, m := range s.cfg.Open {
		outer.Handle(m.Prefix+"/", s.recoverer(s.localOnly(http.StripPrefix(m.Prefix, m.Handler))))
	}
	outer.Handle("/", h)
	return s.boundUnreadBody(outer)
}

// statusWriter records the status for the access log, and hands the
// answer's bytes to the request's capture.
type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
	draft  *capture.Draft
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	w.draft.Answer(b[:n])
	return n, err
}

// Unwrap lets http.ResponseController reach Flush and deadlines.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// companionAgent is the desktop companion's looks (package look's
// UserAgent): a GET every few seconds, logged at debug level.
const companionAgent = "meridian-desktop"

func (s *Server) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		if s.cfg.Hosts.Host != "" {
			// Which host answered; a forwarded answer names the one it
			// was forwarded to.
			w.Header().Set(headerServedByHost, s.cfg.Hosts.Host)
		}
		// The request's id: on its log lines, in its answer, and passed on
		// to the host a request is forwarded to.
		id := reqid.Take(r.Header.Get(reqid.Header))
		r.Header.Set(reqid.Header, id)
		w.Header().Set(reqid.Header, id)
		w.Header().Set(reqid.AnthropicHeader, id)
		r = r.WithContext(reqid.With(r.Context(), id))
		sw := &statusWriter{ResponseWriter: w}
		if api := modelAPI(r); api != "" {
			tr := telemetry.NewTrace(api, start)
			ctx, span := tracing.Server(r.Context(), s.cfg.Telemetry.Tracer, r, r.URL.Path)
			defer func() { tracing.Status(span, sw.status); span.End() }()
			r = r.WithContext(telemetry.With(ctx, tr))
			if s.cfg.Telemetry.Inspector != nil {
				sw.draft = capture.NewDraft(s.cfg.Telemetry.Capture, r.Header)
				r = r.WithContext(capture.With(r.Context(), sw.draft))
			}
			defer func() {
				if !tr.HandedOff() {
					s.record(r, tr, sw.status)
				}
			}()
		}
		next.ServeHTTP(sw, r)
		level := slog.LevelInfo
		if r.URL.Path == "/health" || r.URL.Path == "/ready" || r.Method == http.MethodHead ||
			(r.Method == http.MethodGet && r.UserAgent() == companionAgent) {
			level = slog.LevelDebug
		}
		attrs := []any{"method", r.Method, "path", r.URL.Path,
			"status", sw.status, "bytes", sw.bytes, "took", time.Since(start).Round(time.Microsecond), "agent", r.UserAgent()}
		if via := r.Header.Get(headerForwardedBy); via != "" {
			attrs = append(attrs, "via", via) // relayed by another host
		}
		s.log.Log(r.Context(), level, "request", attrs...)
	})
}

func (s *Server) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.ErrorContext(r.Context(), "handler panic", "panic", v, "path", r.URL.Path)
				s.cfg.Telemetry.Crashes.Panic(v, debug.Stack())
				writeError(w, r, &gateway.Error{Status: http.StatusInternalServerError, Type: "api_error", Message: "internal error"})
			}
		}()
		next.ServeHTTP(w, r)
	})
}
