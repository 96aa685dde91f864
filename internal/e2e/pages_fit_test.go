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
	version := "v1.12.3-rc.1+20261204.abcdef123456"
	mux.Handle("GET /cluster", page(func(b *bytes.Buffer) error { return pages.RenderCluster(b, version, cluster) }))
	mux.Handle("GET /requests", page(func(b *bytes.Buffer) error { return pages.RenderDashboard(b, version, dash) }))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	b := newBrowser(t)
	b.fits(t, 1280, srv.URL+"/cluster", srv.URL+"/requests")
	b.do(t, chromedp.EmulateViewport(1280, 1000))
	for _, name := range []string{"cluster", "requests"} {
		b.do(t, chromedp.Navigate(srv.URL+"/"+name))
		b.screenshot(t, "long-"+name)
	}
	b.clean(t)
}
