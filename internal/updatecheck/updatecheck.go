// Package updatecheck asks, at most once a day, which Meridian release is
// the newest, for an interactive command to mention. It asks one URL (the
// Go module proxy's @latest for Meridian's module by default) with a short
// timeout, never blocks a command past it, keeps the answer in the user's
// cache folder for a day, and is off in CI, when the operator turns it off,
// and by default when nobody is at a terminal to read it.
package updatecheck

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// DefaultURL is the module proxy's answer for Meridian's newest version.
const DefaultURL = "https://proxy.golang.org/github.com/meridian-gw/meridian/@latest"

// Settings in the environment: MERIDIAN_UPDATE_CHECK (on, off, or auto:
// only at a terminal), MERIDIAN_UPDATE_URL (another feed: a mirror, or a
// test's).
const (
	EnvCheck = "MERIDIAN_UPDATE_CHECK"
	EnvURL   = "MERIDIAN_UPDATE_URL"
)

// Defaults: how long an answer is kept, and how long one question may take.
const (
	CacheFor = 24 * time.Hour
	Timeout  = 2 * time.Second
)

// ciVars are set by CI services; any of them turns the check off.
func ciVars() []string {
	return []string{"CI", "CONTINUOUS_INTEGRATION", "GITHUB_ACTIONS", "GITLAB_CI", "BUILDKITE", "JENKINS_URL", "TF_BUILD"}
}

// Enabled reports whether a command may check: never in CI or when turned
// off (flagOff, or MERIDIAN_UPDATE_CHECK=off); with it on, always;
// otherwise only when a person is at a terminal.
func Enabled(getenv func(string) string, flagOff, terminal bool) bool {
	for _, v := range ciVars() {
		if getenv(v) != "" {
			return false
		}
	}
	switch strings.ToLower(getenv(EnvCheck)) {
	case "off", "0", "false", "no":
		return false
	case "on", "1", "true", "yes":
		return !flagOff
	}
	return !flagOff && terminal
}

// Checker asks the feed, through a day's cache.
type Checker struct {
	URL   string // the feed; DefaultURL when empty
	Cache string // the cache file
	// Client makes the request (a client without proxies by default: a
	// loopback feed of a test is reached directly).
	Client  *http.Client
	Timeout time.Duration
	Now     func() time.Time
}

type cached struct {
	Checked time.Time `json:"checked"`
	Latest  string    `json:"latest"`
	URL     string    `json:"url"`
}

// Latest is the newest release the feed names, from the cache when it is
// less than a day old. An error is for the log; a command says nothing.
func (c *Checker) Latest(ctx context.Context) (string, error) {
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	url := c.URL
	if url == "" {
		url = DefaultURL
	}
	if b, err := os.ReadFile(c.Cache); err == nil {
		var e cached
		if json.Unmarshal(b, &e) == nil && e.URL == url && now().Sub(e.Checked) < CacheFor && now().After(e.Checked.Add(-time.Minute)) {
			return e.Latest, nil
		}
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = Timeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", fmt.Errorf("update check: %w", err)
	}
	client := c.Client
	if client == nil {
		client = &http.Client{Transport: &http.Transport{Proxy: http.ProxyFromEnvironment}}
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", fmt.Errorf("update check: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("update check: the feed answered %s", resp.Status)
	}
	var v struct {
		Version string `json:"Version"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&v); err != nil || !valid(v.Version) {
		return "", errors.New("update check: the feed's answer names no version")
	}
	b, _ := json.Marshal(cached{Checked: now(), Latest: v.Version, URL: url})
	if err := os.MkdirAll(filepath.Dir(c.Cache), 0o700); err == nil {
		_ = os.WriteFile(c.Cache, b, 0o600)
	}
	return v.Version, nil
}

// Newer reports whether latest is a later release than current (both
// vMAJOR.MINOR.PATCH, the v optional; a pre-release or a build that is
// not a release is never compared).
func Newer(current, latest string) bool {
	a, ok1 := parse(current)
	b, ok2 := parse(latest)
	if !ok1 || !ok2 {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return b[i] > a[i]
		}
	}
	return false
}

func valid(v string) bool { _, ok := parse(v); return ok }

func parse(v string) ([3]int, bool) {
	var out [3]int
	parts := strings.Split(strings.TrimPrefix(strings.TrimSpace(v), "v"), ".")
	if len(parts) != 3 {
		return out, false
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return out, false
		}
		out[i] = n
	}
	return out, true
}

// CacheFile is where the answer is kept: meridian's folder in the user's
// cache (XDG_CACHE_HOME, else ~/.cache).
func CacheFile(getenv func(string) string) string {
	dir := getenv("XDG_CACHE_HOME")
	if dir == "" {
		if home := getenv("HOME"); home != "" {
			dir = filepath.Join(home, ".cache")
		} else {
			dir = os.TempDir()
		}
	}
	return filepath.Join(dir, "meridian", "update-check.json")
}
