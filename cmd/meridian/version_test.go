package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// `meridian version` names a newer release from the feed (loopback here),
// asking at most once a day; a feed that cannot be reached leaves it
// silent; in CI, or turned off, it asks nothing. --verbose says how the
// binary was built.
func TestVersionMentionsANewerRelease(t *testing.T) {
	var hits atomic.Int32
	feed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte(`{"Version":"v9.1.0","Time":"2026-12-01T00:00:00Z"}`))
	}))
	defer feed.Close()
	old := releaseVersion
	releaseVersion = "v1.0.0"
	defer func() { releaseVersion = old }()
	run := func(cache string, extra []string, args ...string) (string, string) {
		t.Helper()
		env := append([]string{"MERIDIAN_UPDATE_CHECK=on", "MERIDIAN_UPDATE_URL=" + feed.URL, "XDG_CACHE_HOME=" + cache}, extra...)
		root := newRootCommand(env, nil)
		var out, errOut bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&errOut)
		root.SetArgs(append([]string{"version"}, args...))
		if err := root.Execute(); err != nil {
			t.Fatal(err)
		}
		return out.String(), errOut.String()
	}
	cache := t.TempDir()
	for i := range 2 {
		out, notice := run(cache, nil)
		if !strings.HasPrefix(out, "meridian v1.0.0") || !strings.Contains(notice, "a newer release is out: v9.1.0") {
			t.Fatalf("run %d: %q %q", i+1, out, notice)
		}
	}
	if hits.Load() != 1 {
		t.Fatalf("%d requests for two runs in a day", hits.Load())
	}
	for name, extra := range map[string][]string{"CI": {"CI=true"}, "turned off": {"MERIDIAN_UPDATE_CHECK=off"}} {
		if _, notice := run(t.TempDir(), extra); notice != "" {
			t.Fatalf("%s: %q", name, notice)
		}
	}
	if _, notice := run(t.TempDir(), nil, "--no-update-check"); notice != "" {
		t.Fatalf("--no-update-check: %q", notice)
	}
	if hits.Load() != 1 {
		t.Fatalf("the feed was asked %d times; CI and the off switches must ask nothing", hits.Load())
	}
	// Offline: nothing said.
	if _, notice := run(t.TempDir(), []string{"MERIDIAN_UPDATE_URL=http://127.0.0.1:1/@latest"}); notice != "" {
		t.Fatalf("offline: %q", notice)
	}
	out, _ := run(t.TempDir(), []string{"MERIDIAN_UPDATE_CHECK=off"}, "--verbose")
	for _, want := range []string{"commit ", "date ", "built    by a release build (goreleaser) with go", "module   github.com/meridian-gw/meridian"} {
		if !strings.Contains(out, want) {
			t.Fatalf("--verbose lacks %q:\n%s", want, out)
		}
	}
}
