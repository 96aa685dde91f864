package updatecheck_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/testkit"
	"github.com/meridian-gw/meridian/internal/updatecheck"
)

// The check knows nothing of the gateway.
func TestImportsFlowDownward(t *testing.T) { testkit.CheckImports(t) }

func TestNewer(t *testing.T) {
	for _, c := range []struct {
		current, latest string
		newer           bool
	}{
		{"v1.2.3", "v1.2.4", true}, {"1.2.3", "v1.10.0", true}, {"v1.2.3", "v1.2.3", false}, {"v2.0.0", "v1.9.9", false},
		{"dev", "v1.0.0", false}, {"v1.2.3", "v1.3.0-rc.1", false}, {"v1.2.3 (abc)", "v1.3.0", false},
	} {
		if got := updatecheck.Newer(c.current, c.latest); got != c.newer {
			t.Errorf("Newer(%q, %q) = %v", c.current, c.latest, got)
		}
	}
}

func TestEnabled(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	for _, c := range []struct {
		name              string
		getenv            func(string) string
		flagOff, terminal bool
		want              bool
	}{
		{"at a terminal", env(), false, true, true},
		{"piped", env(), false, false, false},
		{"turned on, piped", env(updatecheck.EnvCheck, "on"), false, false, true},
		{"flag off", env(updatecheck.EnvCheck, "on"), true, true, false},
		{"env off", env(updatecheck.EnvCheck, "off"), false, true, false},
		{"CI", env("CI", "true", updatecheck.EnvCheck, "on"), false, true, false},
		{"GitHub Actions", env("GITHUB_ACTIONS", "true"), false, true, false},
	} {
		if got := updatecheck.Enabled(c.getenv, c.flagOff, c.terminal); got != c.want {
			t.Errorf("%s: %v", c.name, got)
		}
	}
}

// One question a day: the answer is cached; a feed that does not answer
// in time costs the timeout and no more.
func TestLatestIsCachedAndBounded(t *testing.T) {
	var hits atomic.Int32
	feed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte(`{"Version":"v9.1.0","Time":"2026-12-01T00:00:00Z"}`))
	}))
	defer feed.Close()
	now := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	c := &updatecheck.Checker{URL: feed.URL, Cache: filepath.Join(t.TempDir(), "meridian", "update-check.json"), Now: func() time.Time { return now }}
	for range 2 {
		if v, err := c.Latest(context.Background()); err != nil || v != "v9.1.0" {
			t.Fatalf("%q %v", v, err)
		}
	}
	if hits.Load() != 1 {
		t.Fatalf("%d requests for two checks within a day", hits.Load())
	}
	now = now.Add(25 * time.Hour)
	if _, err := c.Latest(context.Background()); err != nil || hits.Load() != 2 {
		t.Fatalf("a day later: %v, %d requests", err, hits.Load())
	}

	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer hang.Close()
	slow := &updatecheck.Checker{URL: hang.URL, Cache: filepath.Join(t.TempDir(), "c.json"), Timeout: 200 * time.Millisecond}
	start := time.Now()
	if _, err := slow.Latest(context.Background()); err == nil {
		t.Fatal("a feed that never answered gave a version")
	}
	if took := time.Since(start); took > testkit.Scale(2*time.Second) {
		t.Fatalf("a silent feed held the check %s", took)
	}
}
