package serve

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// serve asks the feed once, in the background, only where the update
// check may ask, and has the newer release for the landing page.
func TestNewerReleaseForTheLandingPage(t *testing.T) {
	var hits atomic.Int32
	feed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte(`{"Version":"v9.1.0"}`))
	}))
	defer feed.Close()
	log := slog.New(slog.DiscardHandler)
	env := []string{"MERIDIAN_UPDATE_URL=" + feed.URL, "XDG_CACHE_HOME=" + t.TempDir()}
	show, wait := newerRelease(context.Background(), Config{Version: "v1.0.0 (abc123)", Welcome: true}, env, log)
	wait()
	if show() != "v9.1.0" || hits.Load() != 1 {
		t.Fatalf("at a terminal: %q after %d requests", show(), hits.Load())
	}
	for name, c := range map[string]struct {
		cfg Config
		env []string
	}{
		"not at a terminal": {Config{Version: "v1.0.0"}, env},
		"in CI":             {Config{Version: "v1.0.0", Welcome: true}, append(env, "CI=true")},
		"turned off":        {Config{Version: "v1.0.0", Welcome: true}, append(env, "MERIDIAN_UPDATE_CHECK=off")},
	} {
		show, wait := newerRelease(context.Background(), c.cfg, c.env, log)
		wait()
		if show() != "" {
			t.Fatalf("%s: %q", name, show())
		}
	}
	if hits.Load() != 1 {
		t.Fatalf("%d requests; only the terminal's check may ask", hits.Load())
	}
}
