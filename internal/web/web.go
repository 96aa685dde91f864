// Package web renders Meridian's pages: the landing page, the telemetry
// dashboard and the providers page. Everything a page needs is in the
// binary (templates, one stylesheet, charts drawn as inline SVG): the pages
// work offline, load nothing from elsewhere and run no script.
package web

import (
	"embed"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/meridian-gw/meridian/internal/gateway"
	"github.com/meridian-gw/meridian/internal/telemetry"
	"github.com/meridian-gw/meridian/internal/telemetry/history"
)

//go:embed templates static
var files embed.FS

// Static is the stylesheet's file system, served under /static/.
func Static() fs.FS {
	sub, err := fs.Sub(files, "static")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	return sub
}

// Pages are the parsed templates, one set per page.
type Pages struct {
	sets map[string]*template.Template
}

func funcMap() template.FuncMap {
	return template.FuncMap{
		"percent": func(f float64) string { return fmt.Sprintf("%.0f%%", f*100) },
		"percentOf": func(n, of int) string {
			if of == 0 {
				return "0%"
			}
			return fmt.Sprintf("%.0f%%", float64(n)*100/float64(of))
		},
		"ms": func(f float64) string {
			if f == 0 {
				return "—"
			}
			if f >= 1000 {
				return fmt.Sprintf("%.2f s", f/1000)
			}
			return fmt.Sprintf("%.0f ms", f)
		},
		"dur": func(d time.Duration) string {
			switch {
			case d <= 0:
				return "—"
			case d < time.Millisecond:
				return "<1 ms"
			case d < time.Second:
				return fmt.Sprintf("%d ms", d.Milliseconds())
			}
			return fmt.Sprintf("%.2f s", d.Seconds())
		},
		"usd": USD,
		// keyed: some request in the window came with a person's or
		// tool's key, so the by-key table is worth showing.
		"keyed": func(groups []telemetry.Group) bool {
			return slices.ContainsFunc(groups, func(g telemetry.Group) bool { return g.Name != "" })
		},
		"clientError": telemetry.ClientError,
		"count":       Count,
		// shortHost is a host's name up to its domain: machine names in
		// a cloud run long and differ in their first label.
		"shortHost": func(h string) string {
			if net.ParseIP(h) != nil {
				return h
			}
			name, _, _ := strings.Cut(h, ".")
			return name
		},
		"mib": func(b int64) string { return fmt.Sprintf("%d MiB", b>>20) },
		"clock": func(t time.Time) string {
			lt := t.Local()
			if time.Since(t) > 20*time.Hour {
				return lt.Format("Jan 2 15:04:05")
			}
			return lt.Format("15:04:05")
		},
		"when": func(t time.Time) string {
			if t.IsZero() {
				return "—"
			}
			return t.Local().Format("Jan 2 15:04")
		},
	}
}

// Count formats a count of tokens for a table: exact below ten thousand,
// then to three figures (12.3k, 1.23M), so a column stays narrow.
func Count(n int64) string {
	f := float64(n)
	switch {
	case n < 10_000:
		return strconv.FormatInt(n, 10)
	case n < 100_000:
		return fmt.Sprintf("%.1fk", f/1e3)
	case n < 1_000_000:
		return fmt.Sprintf("%.0fk", f/1e3)
	case n < 10_000_000:
		return fmt.Sprintf("%.2fM", f/1e6)
	case n < 100_000_000:
		return fmt.Sprintf("%.1fM", f/1e6)
	}
	return fmt.Sprintf("%.0fM", f/1e6)
}

// USD formats dollars for a page.
func USD(f float64) string {
	switch {
	case f <= 0:
		return "$0"
	case f < 0.01:
		return fmt.Sprintf("$%.4f", f)
	case f < 100:
		return fmt.Sprintf("$%.2f", f)
	}
	return fmt.Sprintf("$%.0f", f)
}

// Parse reads the embedded templates.
func Parse() (*Pages, error) {
	p := &Pages{sets: map[string]*template.Template{}}
	for _, name := range []string{"landing", "telemetry", "providers", "cluster", "signin", "key", "inspector", "capture", "console", "login", "panel", "copy", "profiles"} {
		t, err := template.New(name).Funcs(funcMap()).ParseFS(files, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("web: %s: %w", name, err)
		}
		p.sets[name] = t
	}
	return p, nil
}

// frame is what the layout shows around a page.
type frame struct {
	Chrome
	Title, Nav string
	Body       any
}

func (p *Pages) render(w io.Writer, page, title string, ch Chrome, nav string, body any) error {
	return p.sets[page].ExecuteTemplate(w, "layout", frame{Chrome: ch, Title: title, Nav: nav, Body: body})
}

// Hint tells how to point one client at Meridian.
type Hint struct{ Client, Setting string }

// Landing is what GET / shows a browser.
type Landing struct {
	Status string
	// Backends are the CLIs that answer on this listener, the main one
	// first; Processes sums their processes, named by ProcessesLabel.
	Backends       []LandingBackend
	Processes      gateway.BackendLoad
	ProcessesLabel string
	RequestsToday  int
	// FailedToday failed in the gateway or upstream; ClientErrorsToday
	// were the clients' to fix.
	FailedToday, ClientErrorsToday int
	CostToday                      string
	Hints                          []Hint
	KeyRequired                    bool
	// NewerRelease names a newer release than the one running ("" when
	// none is known: the check is off, or found none).
	NewerRelease string
}

// LandingBackend is one CLI that answers on the listener.
type LandingBackend struct {
	// ID names its card (cli, cli-antigravity); Backend and CLI name it
	// ("claude" and "claude", "antigravity" and "agy"); Prefix is where
	// its routes are ("" for the usual ones).
	ID, Backend, CLI, Prefix string
	Found                    bool
	Version, Login           string
}

// BackendNames lists the backends, for the status card.
func (l Landing) BackendNames() string {
	var names []string
	for _, b := range l.Backends {
		names = append(names, b.Backend)
	}
	return strings.Join(names, ", ")
}

// RenderLanding writes the landing page.
func (p *Pages) RenderLanding(w io.Writer, ch Chrome, l Landing) error {
	return p.render(w, "landing", "Overview", ch, "home", l)
}

// ProvidersPage is the providers page: each backend and profile, and the
// latest alerts sent.
type ProvidersPage struct {
	Providers []gateway.Provider
	Alerts    []Alert
}

// Alert is one alert sent to the operator.
type Alert struct {
	At      time.Time `json:"at"`
	Kind    string    `json:"kind"`
	Profile string    `json:"profile"`
	Message string    `json:"message"`
	Host    string    `json:"host"`
}

// RenderProviders writes the providers page.
func (p *Pages) RenderProviders(w io.Writer, ch Chrome, page ProvidersPage) error {
	return p.render(w, "providers", "Providers", ch, "providers", page)
}

// ClusterPage is the cluster page: the hosts sharing the store.
type ClusterPage struct {
	Host, Store, Error string
	Hosts              []ClusterHost
}

// ClusterHost is one host of the cluster page.
type ClusterHost struct {
	Host, Addr, Version, State string
	Live, Running              int
	Started, Heartbeat         time.Time
	Self                       bool
}

// RenderCluster writes the cluster page.
func (p *Pages) RenderCluster(w io.Writer, ch Chrome, c ClusterPage) error {
	return p.render(w, "cluster", "Cluster", ch, "cluster", c)
}

// SignIn is the sign-in form: the page to go on to, whether a wrong key
// was just sent, and what this Meridian takes, so the form says how it
// was started.
type SignIn struct {
	Next  string
	Wrong bool
	// ForKey: the form is /key's, for a key of `meridian key add`.
	ForKey bool
	// AdminKey: this Meridian was started with an admin key; Admin: this
	// browser is signed in with it.
	AdminKey, Admin bool
	// Keys: some key of `meridian key add` is in force.
	Keys bool
}

// KeyPage is what /key shows the holder of one API key: its own figures.
type KeyPage struct {
	Name, Status, Expires, LastUsed      string
	Budget                               string // spent of the budget, "" without one
	Profiles, Models                     []string
	RPM, Concurrent, LastMinute, Running int
	TokensPerDay, TokensToday            int64
	Requests, Errors                     int64
	Input, Output, CacheRead, CacheWrite int64
	Cost                                 float64
}

// RenderKey writes one key's own page.
func (p *Pages) RenderKey(w io.Writer, ch Chrome, k KeyPage) error {
	return p.render(w, "key", "Key "+k.Name, ch, "key", k)
}

// RenderSignIn writes the sign-in form, which posts the admin key or a
// key of `meridian key add`.
func (p *Pages) RenderSignIn(w io.Writer, ch Chrome, s SignIn) error {
	nav := ""
	if s.ForKey {
		nav = "key"
	}
	return p.render(w, "signin", "Sign in", ch, nav, s)
}

// Link is a tab or a window choice.
type Link struct {
	Name, Href string
	On         bool
}

// Options are the values the request filters offer.
type Options struct{ Clients, Models, Verdicts, Keys []string }

// Charts are a dashboard's rendered charts.
type Charts struct {
	Requests, Latency, Tokens, CostByDay, CostByModel, CostByClient template.HTML
}

// Dashboard is what /telemetry shows.
type Dashboard struct {
	Tab, Window   string
	Tabs, Windows []Link
	S             telemetry.Summary
	Cumulative    telemetry.Totals
	Since         time.Time
	P             gateway.BackendLoad
	PLabel        string // what the processes are: "claude processes", "CLI processes"
	Charts        Charts
	CostNote      string
	// The requests tab.
	F       history.Filter
	Options Options
	Rows    []telemetry.Record
	Older   string
	// The logs tab.
	Logs []string
}

// RenderDashboard writes the telemetry dashboard, drawing its charts from
// the summary.
func (p *Pages) RenderDashboard(w io.Writer, ch Chrome, d Dashboard) error {
	if d.Tab == "overview" {
		d.Charts = chartsOf(d.S)
	}
	return p.render(w, "telemetry", "Telemetry", ch, "telemetry", d)
}

func chartsOf(s telemetry.Summary) Charts {
	n := len(s.Series)
	starts := make([]time.Time, n)
	ok, client, failed := make([]float64, n), make([]float64, n), make([]float64, n)
	ttft50, ttft95, tot50, tot95 := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	in, out, read, write := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	for i, b := range s.Series {
		starts[i] = b.Start
		ok[i], client[i], failed[i] = float64(b.Requests-b.Errors), float64(b.ClientErrors), float64(b.Errors-b.ClientErrors)
		ttft50[i], ttft95[i], tot50[i], tot95[i] = b.TTFT.P50, b.TTFT.P95, b.Total.P50, b.Total.P95
		in[i], out[i], read[i], write[i] = float64(b.Tokens.Input), float64(b.Tokens.Output), float64(b.Tokens.CacheRead), float64(b.Tokens.CacheWrite)
	}
	var c Charts
	c.Requests = Bars("requests over time", "", starts, Series{"answered", "s1", ok}, Series{"client errors", "s3", client}, Series{"failed", "err", failed})
	unit := " ms"
	if all := append(slices.Clone(tot95), ttft95...); len(all) > 0 && slices.Max(all) >= 2000 {
		unit = " s"
		for _, v := range [][]float64{ttft50, ttft95, tot50, tot95} {
			for i := range v {
				v[i] /= 1000
			}
		}
	}
	c.Latency = Lines("latency", unit, starts, Series{"first token p50", "s1", ttft50}, Series{"first token p95", "s4", ttft95},
		Series{"total p50", "s2", tot50}, Series{"total p95", "s3", tot95})
	c.Tokens = Bars("tokens over time", "", starts, Series{"input", "s1", in}, Series{"cache read", "s2", read},
		Series{"cache write", "s3", write}, Series{"output", "s4", out})
	c.CostByDay = HBars("cost by day", costRows(s.ByDay))
	c.CostByModel = HBars("cost by model", costRows(s.ByModel))
	c.CostByClient = HBars("cost by client", costRows(s.ByClient))
	return c
}

func costRows(groups []telemetry.Group) []HBar {
	rows := make([]HBar, 0, len(groups))
	for _, g := range groups {
		rows = append(rows, HBar{Name: g.Name, Value: g.Cost, Label: fmt.Sprintf("%s · %d req", USD(g.Cost), g.Requests)})
	}
	return rows
}

// InspectorFilter is the request inspector's filter as the form holds it.
type InspectorFilter struct {
	Key, Model, API, Status string
}

// InspectorRow is one captured request in the inspector's list.
type InspectorRow struct {
	ID                        int64
	Time                      time.Time
	Host, API, Mode, Key      string
	Model, Route, Verdict     string
	Total                     time.Duration
	In, Out                   int64
	RequestBytes, AnswerBytes int64
	Status                    int
}

// InspectorPage is the list of captured requests.
type InspectorPage struct {
	Mode, Bounds string
	F            InspectorFilter
	APIs         []string
	Rows         []InspectorRow
	Older        string // the next page's URL, "" at the end
}

// RenderInspector writes the request inspector's list.
func (p *Pages) RenderInspector(w io.Writer, ch Chrome, page InspectorPage) error {
	return p.render(w, "inspector", "Request inspector", ch, "inspector", page)
}

// CapturePage is one captured request whole; the parts are shown as
// text (indented JSON where they are JSON).
type CapturePage struct {
	ID                                 int64
	Time, Host, API, Client, Key       string
	Model, Effective, Profile, Route   string
	Conversation, Verdict, Error, Mode string
	Live, Replay, Stream               bool
	Status                             int
	Queue, TTFT, Total                 time.Duration
	In, Out, CacheRead, CacheWrite     int64
	Cost                               float64
	RequestBytes, AnswerBytes          int64
	Cut                                string
	Headers, Request, Written, Answer  string
}

// RenderCapture writes one captured request.
func (p *Pages) RenderCapture(w io.Writer, ch Chrome, c CapturePage) error {
	return p.render(w, "capture", fmt.Sprintf("Request %d", c.ID), ch, "inspector", c)
}

// ConsoleKey is one API key as the console lists it.
type ConsoleKey struct {
	Name, Status, Scope, Limits, Capture string
}

// ConsoleHost is one host's profiles, or why they could not be read.
type ConsoleHost struct {
	ID       string
	Self     bool
	Profiles []ConsoleProfile
	Error    string
}

// ConsoleProfile is one profile of a host.
type ConsoleProfile struct {
	Name, Kind        string
	Priority          int
	PlanOnly, Default bool
}

// ConsoleSink is one alert sink (never its secret).
type ConsoleSink struct{ Name, URL, Format string }

// ConsoleAlias is one stored alias.
type ConsoleAlias struct{ Name, Model, Effort string }

// Shown is a secret shown once: a new or rotated key, a sink's signing
// secret.
type Shown struct {
	What, Secret string
	Sink         bool
}

// ConsolePage is the operator's console. CSRF is the token every form
// carries.
type ConsolePage struct {
	Host, CSRF  string
	Error, Done string
	Shown       *Shown
	Keys        []ConsoleKey
	Hosts       []ConsoleHost
	Sinks       []ConsoleSink
	Aliases     []ConsoleAlias
}

// RenderConsole writes the operator's console.
func (p *Pages) RenderConsole(w io.Writer, ch Chrome, c ConsolePage) error {
	return p.render(w, "console", "Console", ch, "console", c)
}

// LoginPage is a login profile's login relayed to the page.
type LoginPage struct {
	// Host is the other host the login runs on ("": this one).
	ID, Profile, Host, State, URL, Error, CSRF string
	AsksCode, CodeSent                         bool
}

// RenderLogin writes a login's page.
func (p *Pages) RenderLogin(w io.Writer, ch Chrome, l LoginPage) error {
	return p.render(w, "login", "Log in "+l.Profile, ch, "console", l)
}

// Panel is the desktop companion's panel: a compact page for a small
// window, refreshed every few seconds.
type Panel struct {
	// State is serving, paused or degraded.
	State    string
	Host     string
	At       time.Time
	Profiles []PanelProfile
	// Errors are the latest failed requests; Kept says telemetry keeps
	// requests at all.
	Errors  []telemetry.Record
	Kept    bool
	Alerts  []Alert
	Builder Builder
}

// PanelProfile is one profile's plan windows and conversations.
type PanelProfile struct {
	Name, Backend, Status string
	Windows               []PlanWindow
	Live, Running         int
}

// Builder is the setup command builder: the clients (Client is the
// name, Setting the title), the choice, and the command it built.
type Builder struct {
	Clients        []Hint
	Client, KeyEnv string
	SetDefault     bool
	Command, Error string
}

// RenderPanel writes the panel.
func (p *Pages) RenderPanel(w io.Writer, ch Chrome, panel Panel) error {
	return p.render(w, "panel", "Panel", ch, "panel", panel)
}

// RenderCopy writes the page a browser gets for the panel's copy link:
// the text, to copy by hand (the companion's window copies it itself).
func (p *Pages) RenderCopy(w io.Writer, ch Chrome, text string) error {
	return p.render(w, "copy", "Copy", ch, "panel", text)
}
