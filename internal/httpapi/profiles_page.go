package httpapi

import (
	"bytes"
	"cmp"
	"context"
	"net/http"
	"slices"
	"strings"

	"github.com/meridian-gw/meridian/internal/backend"
	"github.com/meridian-gw/meridian/internal/dispatch"
	"github.com/meridian-gw/meridian/internal/web"
)

// chrome is what the frame of an operator's page shows: the version and
// each profile's plan windows as dispatch sees them (no CLI is asked: the
// figures are the last reported, the store read at most once a second).
func (s *pageRoutes) chrome(ctx context.Context) web.Chrome {
	if s.backends == nil || s.backends.dispatch == nil {
		return s.bare()
	}
	return s.chromeOf(s.backends.dispatch.Standings(ctx))
}

// chromeOf is the frame with standings already read.
func (s *pageRoutes) chromeOf(standings []dispatch.Standing) web.Chrome {
	ch := s.bare()
	for _, st := range standings {
		ch.Plans = append(ch.Plans, planBar(st))
	}
	return ch
}

// bare is the frame of the pages others than the operator see (the
// sign-in form, a key's own page) and the panel, which has bars of its own.
func (s *pageRoutes) bare() web.Chrome { return web.Chrome{Version: s.version} }

// planBar is one profile's part of the header's bar.
func planBar(st dispatch.Standing) web.PlanBar {
	b := web.PlanBar{Profile: st.Name, Default: st.Default, State: "open"}
	switch {
	case st.Spent != nil && !st.Spent.ResetsAt.Before(st.BenchedUntil):
		b.State, b.Until = "spent", st.Spent.ResetsAt
	case !st.BenchedUntil.IsZero():
		b.State, b.Until = "benched", st.BenchedUntil
	}
	for _, w := range st.Windows {
		b.Windows = append(b.Windows, web.PlanWindow{Type: w.Name, Name: windowTitle(w.Name), Utilization: w.Used, ResetsAt: w.ResetsAt})
	}
	// The fullest first: the bar leads with what limits the profile.
	slices.SortStableFunc(b.Windows, func(x, y web.PlanWindow) int { return cmp.Compare(y.Utilization, x.Utilization) })
	return b
}

// profilesPage is GET /profiles: each profile as requests are placed on
// it (its plan windows, bench, plan-only state, login and load), with the
// console's actions on it when there is a console.
func (c *consoleRoutes) profilesPage(b *backends) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		q := r.URL.Query()
		page := web.ProfilesPage{Done: q.Get("done"), Error: q.Get("error")}
		accounts, moveAt := b.dispatch.Placing()
		page.Accounts, page.MoveAt = string(accounts), moveAt
		if c.admin.console != nil {
			page.CSRF = c.token()
		}
		standings := b.dispatch.Standings(ctx)
		for _, st := range standings {
			card := web.ProfileCard{PlanBar: planBar(st), Fallback: st.Fallback, PlanOnly: st.PlanOnly, ObservedAt: st.ObservedAt}
			if st.Gateway != nil {
				if ps := st.Gateway.Providers(ctx); len(ps) > 0 {
					p := ps[0]
					card.Backend, card.Status, card.Login = p.Backend, p.Status, loginText(p.Auth)
					card.APIKey = p.Auth != nil && p.Auth.LoggedIn && p.Auth.Method == "api_key"
					card.Live, card.Running = p.Processes.Live-p.Processes.Spares, p.Processes.Running
				}
			}
			page.Profiles = append(page.Profiles, card)
		}
		c.site.page(w, r, http.StatusOK, func(buf *bytes.Buffer) error {
			return c.site.pages.RenderProfiles(buf, c.site.chromeOf(standings), page)
		})
	}
}

// loginText says what the CLI's auth status said of the login.
func loginText(a *backend.Auth) string {
	switch {
	case a == nil:
		return "unknown"
	case !a.LoggedIn:
		return "not logged in"
	}
	return strings.Join(slices.DeleteFunc([]string{"logged in", a.Method, a.Provider}, func(s string) bool { return s == "" }), " · ")
}
