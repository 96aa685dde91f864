package e2e

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/meridian-gw/meridian/internal/telemetry"
	"github.com/meridian-gw/meridian/internal/web"
)

// The pages keep to the window with the longest names a real deployment
// has: three hosts named as cloud machines are, release versions, dated
// model names with a context suffix, and a long upstream error. Rendered
// from the web package alone and measured in a real browser at 1280 px.
func TestPagesFitWithLongNames(t *testing.T) {
	pages, err := web.Parse()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	hostNames := []string{"ip-10-120-33-201.eu-west-1.compute.internal", "ip-10-120-35-17.eu-west-1.compute.internal", "meridian-gateway-canary-2"}
	var cluster web.ClusterPage
	cluster.Store = "postgres"
	var summary telemetry.Summary
	var rows []telemetry.Record
	for i, h := range hostNames {
		cluster.Hosts = append(cluster.Hosts, web.ClusterHost{Host: h, Addr: "http://" + h + ":3456", Version: "v1.12.3-rc.1+20261204.abcdef123456",
			State: []string{"serving", "draining", "gone"}[i], Live: 12, Running: 3, Started: now.Add(-30 * time.Hour), Heartbeat: now, Self: i == 0})
		summary.ByHost = append(summary.ByHost, telemetry.Group{Name: h, Requests: 1000})
		for j, status := range []int{200, 529, 400} {
			r := telemetry.Record{ID: int64(i*3 + j), Host: h, Time: now.Add(-25 * time.Hour), API: telemetry.APIResponses, Client: "opencode-plugin",
				Conversation: "6e26beef926d", Effective: "claude-sonnet-4-5-20250929[1m]", Verdict: "continuation", Live: true, Replay: true,
				QueueWait: time.Second, TTFT: 12345 * time.Millisecond, Total: 123456 * time.Millisecond,
				Tokens: telemetry.Tokens{Input: 1234567, Output: 123456, CacheRead: 12345678, CacheWrite: 1234567}, Cost: 123.45, Status: status}
			if status != 200 {
				r.ErrorType, r.ErrorMessage = "overloaded_error", strings.Repeat("the upstream is overloaded; Retry-After says when to send it again. ", 4)
			}
			rows = append(rows, r)
		}
	}
	dash := web.Dashboard{Tab: "requests", Window: "24h", S: summary, Rows: rows,
		Options: web.Options{Clients: []string{"opencode-plugin"}, Models: []string{"claude-sonnet-4-5-20250929[1m]"}, Verdicts: []string{"continuation"}}}

	mux := http.NewServeMux()
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(web.Static())))
	page := func(render func(*bytes.Buffer) error) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			var b bytes.Buffer
			if err := render(&b); err != nil {
				http.Error(w, err.Error(), 500)
				return
			}
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = w.Write(b.Bytes())
		}
	}
	// The header's bar with as many profiles as a team keeps, each with
	// every window the CLI reports.
	ch := web.Chrome{Version: "v1.12.3-rc.1+20261204.abcdef123456"}
	var profiles web.ProfilesPage
	for i, name := range []string{"work-team-enterprise-primary", "personal-max-20x", "backup-api-key-billing", "ci-token-long-lived-2026", "design-review-seat"} {
		bar := web.PlanBar{Profile: name, Default: i == 0, State: []string{"open", "benched", "spent", "open", "open"}[i], Until: now.Add(3 * time.Hour)}
		for j, w := range []string{"five_hour", "seven_day", "seven_day_opus", "seven_day_sonnet"} {
			bar.Windows = append(bar.Windows, web.PlanWindow{Type: w, Name: w, Utilization: float64(j+i) / 8, ResetsAt: now.Add(time.Duration(j+1) * 5 * time.Hour)})
		}
		ch.Plans = append(ch.Plans, bar)
		profiles.Profiles = append(profiles.Profiles, web.ProfileCard{PlanBar: bar, Backend: "claude", Login: "logged in · claude.ai · firstParty", ObservedAt: now, Live: 12, Running: 3})
	}
	profiles.Accounts, profiles.MoveAt, profiles.CSRF = "headroom", 0.95, strings.Repeat("ab", 32)
	mux.Handle("GET /cluster", page(func(b *bytes.Buffer) error { return pages.RenderCluster(b, ch, cluster) }))
	mux.Handle("GET /requests", page(func(b *bytes.Buffer) error { return pages.RenderDashboard(b, ch, dash) }))
	mux.Handle("GET /profiles", page(func(b *bytes.Buffer) error { return pages.RenderProfiles(b, ch, profiles) }))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	b := newBrowser(t)
	b.fits(t, 1280, srv.URL+"/cluster", srv.URL+"/requests", srv.URL+"/profiles")
	b.do(t, chromedp.EmulateViewport(1280, 1000))
	for _, name := range []string{"cluster", "requests", "profiles"} {
		b.do(t, chromedp.Navigate(srv.URL+"/"+name))
		b.screenshot(t, "long-"+name)
	}
	b.clean(t)
}
