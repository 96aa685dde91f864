package httpapi

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/meridian-gw/meridian/internal/alerts"
	"github.com/meridian-gw/meridian/internal/clientsetup"
	"github.com/meridian-gw/meridian/internal/gateway"
	"github.com/meridian-gw/meridian/internal/logring"
	"github.com/meridian-gw/meridian/internal/telemetry"
	"github.com/meridian-gw/meridian/internal/telemetry/history"
	"github.com/meridian-gw/meridian/internal/web"
)

// pageRoutes are the pages a person reads: the landing page, the
// dashboard, the providers and the sign-in form.
type pageRoutes struct {
	pages    *web.Pages
	version  string
	log      *slog.Logger
	access   *access
	backends *backends
	mounts   []Mount
	history  *history.History // nil: telemetry is not kept
	logs     *logring.Ring
	alerts   AlertLog // nil: none listed
	newer    func() string
}

// maxSignInBytes bounds the sign-in form: a key and a path.
const maxSignInBytes = 8 << 10

// signIn serves POST /sign-in, the form's key and the page to go on to:
// the admin key sets the cookie and sends the browser on; anything else
// answers the form again, saying so.
func (s *pageRoutes) signIn(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxSignInBytes)
	if err := r.ParseForm(); err != nil {
		writeError(w, r, gateway.InvalidRequest("the sign-in form could not be read"))
		return
	}
	next, key := onwardPath(r.PostForm.Get("next")), r.PostForm.Get("key")
	if s.access.isAdmin(key) {
		http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: browserToken(s.access.admin), Path: "/",
			HttpOnly: true, SameSite: http.SameSiteStrictMode, MaxAge: int((30 * 24 * time.Hour).Seconds())})
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	// A person's or tool's key signs in to its own page only.
	if k, ok := s.access.keyInForce(r, key); ok {
		http.SetCookie(w, &http.Cookie{Name: keyCookie, Value: keyToken(k.Digest), Path: "/key",
			HttpOnly: true, SameSite: http.SameSiteStrictMode, MaxAge: int((30 * 24 * time.Hour).Seconds())})
		http.Redirect(w, r, "/key", http.StatusSeeOther)
		return
	}
	if !s.access.hasAdmin && s.access.keys == nil {
		http.Redirect(w, r, next, http.StatusSeeOther) // nothing to sign in to
		return
	}
	s.page(w, r, http.StatusUnauthorized, func(b *bytes.Buffer) error {
		return s.pages.RenderSignIn(b, s.bare(), s.signInForm(r, next, true))
	})
}

// signInForm says what the form takes here: the admin key, if this
// Meridian was started with one, and keys of `meridian key add`, if any
// is in force.
func (s *pageRoutes) signInForm(r *http.Request, next string, wrong bool) web.SignIn {
	return web.SignIn{Next: next, Wrong: wrong, ForKey: next == "/key", AdminKey: s.access.hasAdmin, Admin: s.access.hasAdmin && s.access.cookieOK(r),
		Keys: s.access.anyKeyInForce(r)}
}

// onwardPath is where a signed-in browser goes: only ever a path here.
// "//host/" (or "/\host/", which browsers read the same) would send it
// elsewhere, so leading slashes and backslashes collapse to one.
func onwardPath(next string) string {
	u, err := url.Parse(next)
	if err != nil {
		return "/"
	}
	to := url.URL{Path: "/" + strings.TrimLeft(u.Path, "/\\"), RawQuery: u.RawQuery}
	return to.String()
}

// wantsHTML: a browser's navigation asks for HTML first; probes and
// clients ask for JSON or anything.
func wantsHTML(r *http.Request) bool {
	accept := r.Header.Get("Accept")
	return r.Method == http.MethodGet && strings.Contains(accept, "text/html") && !strings.HasPrefix(accept, "application/json")
}

// page renders a page of this server's.
func (s *pageRoutes) page(w http.ResponseWriter, r *http.Request, status int, render func(*bytes.Buffer) error) {
	renderPage(s.log, w, r, status, render)
}

// renderPage renders into a buffer first, so a template failure is a
// clean 500 rather than half a page.
func renderPage(log *slog.Logger, w http.ResponseWriter, r *http.Request, status int, render func(*bytes.Buffer) error) {
	var buf bytes.Buffer
	if err := render(&buf); err != nil {
		log.Error("page failed to render", "path", r.URL.Path, "err", err)
		http.Error(w, "the page failed to render", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	// Nothing loads from elsewhere: the pages are self-contained.
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// signInPage answers a page asked for without the admin key with the
// sign-in form, which goes on to that page (less any key put in its URL,
// which the form must not echo).
func (s *pageRoutes) signInPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	q.Del("key")
	next := url.URL{Path: r.URL.Path, RawQuery: q.Encode()}
	s.page(w, r, http.StatusUnauthorized, func(b *bytes.Buffer) error {
		return s.pages.RenderSignIn(b, s.bare(), s.signInForm(r, next.String(), false))
	})
}

// landingBackend is one CLI's card on the landing page.
func landingBackend(id, prefix string, cli gateway.CLI, h gateway.CLIHealth) web.LandingBackend {
	b := web.LandingBackend{ID: id, Backend: cli.Backend, CLI: cli.Name, Prefix: prefix, Found: h.Found, Version: h.Version, Login: "login unknown"}
	if a := h.Auth; a != nil {
		b.Login = "not logged in"
		if a.LoggedIn {
			b.Login = strings.TrimSpace("logged in " + a.Method)
		}
	}
	return b
}

// landing is GET / for a browser.
func (s *pageRoutes) landing(w http.ResponseWriter, r *http.Request) {
	l := s.landingData(r)
	s.page(w, r, http.StatusOK, func(b *bytes.Buffer) error { return s.pages.RenderLanding(b, s.chrome(r.Context()), l) })
}

// landingData is what the landing page shows, in either form.
func (s *pageRoutes) landingData(r *http.Request) web.Landing {
	h := s.backends.dispatch.Default().Health(r.Context())
	l := web.Landing{Status: h.Status, Processes: s.backends.load(), ProcessesLabel: s.backends.label(), CostToday: "$0",
		KeyRequired: s.access.hasAdmin || s.access.anyKeyInForce(r)}
	if s.newer != nil {
		l.NewerRelease = s.newer()
	}
	l.Backends = append(l.Backends, landingBackend("cli", "", s.backends.dispatch.Default().CLI(), h.CLI()))
	for _, m := range s.mounts {
		if m.Gateway != nil {
			mh := m.Gateway.Health(r.Context())
			if mh.Status != "ok" && l.Status == "ok" {
				l.Status = "degraded"
			}
			l.Backends = append(l.Backends, landingBackend("cli-"+m.Gateway.CLI().Backend, m.Prefix, m.Gateway.CLI(), mh.CLI()))
		}
	}
	if s.history != nil {
		now := time.Now()
		y, m, d := now.Date()
		midnight := time.Date(y, m, d, 0, 0, 0, 0, now.Location())
		if recs, err := s.history.Between(r.Context(), midnight, now.Add(time.Second)); err == nil {
			var t telemetry.Totals
			for _, rec := range recs {
				t.Add(rec)
			}
			l.RequestsToday, l.FailedToday, l.ClientErrorsToday = t.Requests, t.Failures(), t.ClientErrors
			l.CostToday = web.USD(t.Cost)
		}
	}
	base := "http://" + r.Host
	// The same commands `meridian setup` takes, with the address this page
	// was reached at when it is not the default.
	where := ""
	if host, port, err := net.SplitHostPort(r.Host); err == nil {
		if host != "127.0.0.1" {
			where += " --host " + host
		}
		if port != "3456" {
			where += " --port " + port
		}
	}
	for _, c := range clientsetup.Clients() {
		cmd, err := clientsetup.Command(clientsetup.Choice{Client: c.Name, Addr: r.Host})
		if err == nil {
			l.Hints = append(l.Hints, web.Hint{Client: c.Title, Setting: cmd})
		}
	}
	l.Hints = append(l.Hints,
		web.Hint{Client: "Anything reading the usual variables", Setting: "eval \"$(meridian setup env --print" + where + ")\""},
		web.Hint{Client: "Anthropic SDKs", Setting: `base_url="` + base + `"`},
		web.Hint{Client: "OpenAI SDKs", Setting: `base_url="` + base + `/v1"`})
	return l
}

// providersStatus is GET /providers/status.
func (s *pageRoutes) providersStatus(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"providers": s.backends.providers(r.Context()), "alerts": s.recentAlerts(r.Context())})
}

// providersPage is GET /providers.
func (s *pageRoutes) providersPage(w http.ResponseWriter, r *http.Request) {
	page := web.ProvidersPage{Providers: s.backends.providers(r.Context()), Alerts: s.recentAlerts(r.Context())}
	s.page(w, r, http.StatusOK, func(b *bytes.Buffer) error { return s.pages.RenderProviders(b, s.chrome(r.Context()), page) })
}

// AlertLog lists the alerts sent (package alerts).
type AlertLog interface {
	Recent(ctx context.Context, limit int) ([]alerts.Sent, error)
}

// recentAlerts are the latest alerts any host sent; a store that cannot
// say lists none (logged): the page shows the providers regardless.
func (s *pageRoutes) recentAlerts(ctx context.Context) []web.Alert {
	out := []web.Alert{}
	if s.alerts == nil {
		return out
	}
	recent, err := s.alerts.Recent(ctx, 20)
	if err != nil {
		s.log.Warn("store: could not read the alerts sent", "err", err)
		return out
	}
	for _, a := range recent {
		out = append(out, web.Alert{At: a.At.UTC(), Kind: a.Kind, Profile: a.Profile, Message: a.Message, Host: a.Host})
	}
	return out
}

var dashboardWindows = []struct {
	name string
	d    time.Duration
}{{"1h", time.Hour}, {"24h", 24 * time.Hour}, {"7d", 7 * 24 * time.Hour}, {"30d", 30 * 24 * time.Hour}}

// fittingWindow is the dashboard's window when none is asked for: the
// day, or the hour while everything recorded is younger than that (a
// fresh install's few requests would be one sliver of a day's chart).
func fittingWindow(since, now time.Time) string {
	if since.IsZero() || now.Sub(since) < time.Hour {
		return "1h"
	}
	return "24h"
}

// dashboard is GET /telemetry.
func (s *pageRoutes) dashboard(w http.ResponseWriter, r *http.Request) {
	if s.history == nil {
		failWith(s.log, w, r, telemetryOff())
		return
	}
	q := r.URL.Query()
	d := web.Dashboard{Tab: q.Get("tab"), Window: q.Get("window"), CostNote: costNote}
	if !slices.Contains([]string{"overview", "requests", "logs"}, d.Tab) {
		d.Tab = "overview"
	}
	now := time.Now()
	// The totals of everything kept: the overview shows them, and their
	// start picks the window when none was asked for. One read serves both.
	var cumulative telemetry.Totals
	var since time.Time
	var cumErr error
	if d.Tab == "overview" || d.Window == "" {
		cumulative, since, cumErr = s.history.Cumulative(r.Context())
	}
	if d.Window == "" {
		d.Window = "24h"
		if cumErr == nil {
			d.Window = fittingWindow(since, now)
		}
	}
	window := 24 * time.Hour
	for _, wd := range dashboardWindows {
		if wd.name == d.Window {
			window = wd.d
		}
	}
	link := func(tab, win string) string {
		v := url.Values{"tab": {tab}, "window": {win}}
		return "/telemetry?" + v.Encode()
	}
	for _, wd := range dashboardWindows {
		d.Windows = append(d.Windows, web.Link{Name: wd.name, Href: link(d.Tab, wd.name), On: wd.name == d.Window})
	}
	for _, tab := range []string{"overview", "requests", "logs"} {
		d.Tabs = append(d.Tabs, web.Link{Name: tab, Href: link(tab, d.Window), On: tab == d.Tab})
	}
	records, err := s.history.Between(r.Context(), now.Add(-window), now.Add(time.Second))
	if err != nil {
		failWith(s.log, w, r, err)
		return
	}
	d.S = telemetry.Summarize(records, now.Add(-window), now.Add(time.Second), seriesBuckets, time.Local)
	d.P, d.PLabel = s.backends.load(), s.backends.label()
	switch d.Tab {
	case "overview":
		if cumErr != nil {
			failWith(s.log, w, r, cumErr)
			return
		}
		d.Cumulative, d.Since = cumulative, since
	case "requests":
		d.F = history.Filter{Client: q.Get("client"), Model: q.Get("model"), Verdict: q.Get("verdict"), Key: q.Get("key"),
			MissedCache: q.Get("missed_cache") == "1"}
		if st := q.Get("status"); statusFilter(st) {
			d.F.Status = st
		}
		for _, g := range d.S.ByClient {
			d.Options.Clients = append(d.Options.Clients, g.Name)
		}
		for _, g := range d.S.ByModel {
			d.Options.Models = append(d.Options.Models, g.Name)
		}
		for _, g := range d.S.Verdicts {
			d.Options.Verdicts = append(d.Options.Verdicts, g.Name)
		}
		for _, g := range d.S.ByKey {
			if g.Name != "" {
				d.Options.Keys = append(d.Options.Keys, g.Name)
			}
		}
		var before int64
		if v := q.Get("before"); v != "" {
			before, _ = strconv.ParseInt(v, 10, 64)
		}
		const pageSize = 100
		rows, err := s.history.Page(r.Context(), d.F, before, pageSize)
		if err != nil {
			failWith(s.log, w, r, err)
			return
		}
		d.Rows = rows
		if len(rows) == pageSize {
			older := r.URL.Query()
			older.Set("before", strconv.FormatInt(rows[len(rows)-1].ID, 10))
			d.Older = "/telemetry?" + older.Encode()
		}
	case "logs":
		if s.logs != nil {
			d.Logs = s.logs.Lines()
		}
	}
	s.page(w, r, http.StatusOK, func(b *bytes.Buffer) error { return s.pages.RenderDashboard(b, s.chrome(r.Context()), d) })
}
