package web

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/telemetry"
	"github.com/meridian-gw/meridian/internal/testkit"
)

func TestImportsFlowDownward(t *testing.T) {
	testkit.CheckImports(t, "internal/gateway", "internal/telemetry", "internal/telemetry/history")
}

// Names from requests (a model, a client) reach the page escaped: a
// hostile model name cannot become markup.
func TestPagesEscapeWhatClientsSent(t *testing.T) {
	p, err := Parse()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	hostile := `<script>alert(1)</script>`
	rec := telemetry.Record{Time: now.Add(-time.Minute), API: telemetry.APIMessages, Client: hostile, Model: hostile, Status: 200, Cost: 0.01}
	s := telemetry.Summarize([]telemetry.Record{rec}, now.Add(-time.Hour), now, 12, time.UTC)
	for _, tab := range []string{"overview", "requests"} {
		var b bytes.Buffer
		if err := p.RenderDashboard(&b, Chrome{Version: "test"}, Dashboard{Tab: tab, S: s, Rows: []telemetry.Record{rec}}); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(b.String(), "<script>") {
			t.Fatalf("%s tab: a client's name became markup", tab)
		}
		if !strings.Contains(b.String(), "&lt;script&gt;") {
			t.Fatalf("%s tab: the name is missing", tab)
		}
	}
}

// With several hosts sharing the store, the overview groups requests by
// host and each request names its host; on one host neither shows.
func TestDashboardNamesHostsWhenSeveral(t *testing.T) {
	p, err := Parse()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	a := telemetry.Record{Time: now.Add(-time.Minute), API: telemetry.APIMessages, Host: "host-a", Status: 200}
	b := a
	b.Host = "host-b"
	render := func(tab string, recs ...telemetry.Record) string {
		var out bytes.Buffer
		s := telemetry.Summarize(recs, now.Add(-time.Hour), now, 12, time.UTC)
		if err := p.RenderDashboard(&out, Chrome{Version: "test"}, Dashboard{Tab: tab, S: s, Rows: recs}); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	if got := render("overview", a, b); !strings.Contains(got, `id="hosts"`) || !strings.Contains(got, "host-b") {
		t.Fatal("the overview of two hosts does not group by host")
	}
	if got := render("requests", a, b); !strings.Contains(got, "<th>time · host</th>") || !strings.Contains(got, `<small class="host" title="host-a">host-a</small>`) {
		t.Fatal("the requests of two hosts do not name their host")
	}
	if got := render("overview", a) + render("requests", a); strings.Contains(got, `id="hosts"`) || strings.Contains(got, "host</th>") {
		t.Fatal("one host's dashboard shows hosts")
	}
}

func TestCountStaysNarrow(t *testing.T) {
	for in, want := range map[int64]string{0: "0", 9999: "9999", 12345: "12.3k", 123456: "123k", 1234567: "1.23M", 12345678: "12.3M", 123456789: "123M"} {
		if got := Count(in); got != want {
			t.Errorf("Count(%d) = %q, want %q", in, got, want)
		}
	}
}

func TestNiceMax(t *testing.T) {
	for in, want := range map[float64]float64{0: 1, 0.3: 0.5, 3: 5, 7: 10, 12: 20, 1500: 2000} {
		if got := niceMax(in); got != want {
			t.Errorf("niceMax(%v) = %v, want %v", in, got, want)
		}
	}
}

// The landing page names a newer release when one is known.
func TestLandingNamesANewerRelease(t *testing.T) {
	p, err := Parse()
	if err != nil {
		t.Fatal(err)
	}
	for newer, want := range map[string]bool{"v9.1.0": true, "": false} {
		var b bytes.Buffer
		if err := p.RenderLanding(&b, Chrome{Version: "v1.0.0"}, Landing{Status: "ok", NewerRelease: newer}); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(b.String(), `id="newer-release">A newer release is out: v9.1.0.`); got != want {
			t.Fatalf("newer %q: shown %v", newer, got)
		}
	}
}
