package httpapi

import (
	"bytes"
	"cmp"
	"net/http"
	"strings"
	"time"

	"github.com/meridian-gw/meridian/internal/clientsetup"
	"github.com/meridian-gw/meridian/internal/gateway"
	"github.com/meridian-gw/meridian/internal/telemetry/history"
	"github.com/meridian-gw/meridian/internal/web"
)

// panelRows bounds the panel's lists: it is a glance, the pages have
// the rest.
const panelRows = 5

// panel is GET /panel, the desktop companion's window: each profile's
// plan windows as bars, its live conversations, the latest errors and
// alerts, and the setup command builder.
func (s *Server) panel(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	p := web.Panel{State: "serving", Host: s.cluster.host, At: time.Now(), Alerts: s.site.recentAlerts(ctx)}
	switch {
	case s.paused.on.Load():
		p.State = "paused"
	case s.gate.isClosed():
		p.State = "draining"
	}
	for _, pr := range s.backends.providers(ctx) {
		if pr.Status != "ok" && p.State == "serving" {
			p.State = "degraded"
		}
		pp := web.PanelProfile{Name: pr.Profile, Backend: pr.Backend, Status: pr.Status,
			Live: pr.Processes.Live - pr.Processes.Spares, Running: pr.Processes.Running}
		for _, rw := range pr.RateLimits {
			pp.Windows = append(pp.Windows, web.PlanWindow{Type: rw.Type, Name: windowTitle(rw.Type), Utilization: rw.Utilization, ResetsAt: rw.ResetsAt})
		}
		p.Profiles = append(p.Profiles, pp)
	}
	p.Alerts = p.Alerts[:min(len(p.Alerts), panelRows)]
	if h := s.site.history; h != nil {
		p.Kept = true
		if recs, err := h.Page(ctx, history.Filter{Status: "error"}, 0, panelRows); err == nil {
			p.Errors = recs
		} else {
			s.log.WarnContext(r.Context(), "store: could not read the latest errors for the panel", "err", err)
		}
	}
	p.Builder = builder(r)
	s.site.page(w, r, http.StatusOK, func(b *bytes.Buffer) error { return s.pages.RenderPanel(b, s.site.bare(), p) })
}

// builder is the setup builder as the panel's form left it.
func builder(r *http.Request) web.Builder {
	q := r.URL.Query()
	b := web.Builder{Client: cmp.Or(q.Get("client"), "claude-code"), SetDefault: q.Get("set_default") != "", KeyEnv: q.Get("key_env")}
	for _, c := range clientsetup.Clients() {
		b.Clients = append(b.Clients, web.Hint{Client: c.Name, Setting: c.Title})
	}
	cmd, err := clientsetup.Command(clientsetup.Choice{Client: b.Client, Addr: r.Host, SetDefault: b.SetDefault, KeyEnv: b.KeyEnv})
	if err != nil {
		b.Error = err.Error()
		return b
	}
	b.Command = cmd
	return b
}

// maxCopyText bounds what the copy page shows: a setup command.
const maxCopyText = 1 << 10

// panelCopy is GET /panel/copy: in a browser, the text to copy by hand.
// The companion's window never loads it: it copies the text itself.
func (s *Server) panelCopy(w http.ResponseWriter, r *http.Request) {
	text := r.URL.Query().Get("text")
	if len(text) > maxCopyText {
		writeError(w, r, gateway.InvalidRequest("text: at most 1 KiB"))
		return
	}
	s.site.page(w, r, http.StatusOK, func(b *bytes.Buffer) error { return s.pages.RenderCopy(b, s.site.bare(), text) })
}

// windowTitle names a CLI's window type for a person.
func windowTitle(t string) string {
	switch t {
	case "five_hour":
		return "5-hour window"
	case "seven_day":
		return "7-day window"
	case "seven_day_opus":
		return "7-day Opus window"
	}
	return strings.ReplaceAll(t, "_", " ")
}
