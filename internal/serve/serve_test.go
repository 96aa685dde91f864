package serve

import (
	"strings"
	"testing"
	"time"
)

// Lowering --max-live, as docs/conversations.md advises small machines, lowers the
// default --max-concurrent with it; only an explicit contradiction fails.
func TestMaxLiveLowersTheDefaultConcurrency(t *testing.T) {
	if n, err := settleConcurrency(10, 4, false); err != nil || n != 4 {
		t.Fatalf("--max-live 4 with the default: %d, %v", n, err)
	}
	if n, err := settleConcurrency(3, 4, true); err != nil || n != 3 {
		t.Fatalf("--max-concurrent 3 --max-live 4: %d, %v", n, err)
	}
	if _, err := settleConcurrency(10, 4, true); err == nil || !strings.Contains(err.Error(), "--max-live 4 is below --max-concurrent 10") {
		t.Fatalf("explicit contradiction: %v", err)
	}
}

func TestBadSettingsAreRefused(t *testing.T) {
	ok := Config{Port: 0, MaxConcurrent: 1, MaxLive: 1, LogLevel: "info", LogFormat: "text", DataDir: t.TempDir()}
	for name, c := range map[string]func(*Config){
		"--log-level":      func(c *Config) { c.LogLevel = "loud" },
		"--log-format":     func(c *Config) { c.LogFormat = "xml" },
		"--port":           func(c *Config) { c.Port = 70000 },
		"--max-concurrent": func(c *Config) { c.MaxConcurrent = 0 },
	} {
		cfg := ok
		c(&cfg)
		if err := Run(t.Context(), cfg, nil, nil); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// An idle profile is probed once its figures are old, and then no more
// often than probeEvery; a busy one never.
func TestIdleProbeIsDue(t *testing.T) {
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name          string
		figures, prob time.Duration // ago; 0: never
		running       int
		want          bool
	}{
		{name: "never seen, never probed", want: true},
		{name: "fresh figures", figures: time.Minute},
		{name: "old figures", figures: 20 * time.Minute, want: true},
		{name: "old figures, probed lately", figures: 20 * time.Minute, prob: 5 * time.Minute},
		{name: "old figures, probed long ago", figures: 40 * time.Minute, prob: 16 * time.Minute, want: true},
		{name: "a turn runs", figures: 20 * time.Minute, running: 1},
	} {
		ago := func(d time.Duration) time.Time {
			if d == 0 {
				return time.Time{}
			}
			return now.Add(-d)
		}
		if got := probeDue(now, ago(c.figures), ago(c.prob), c.running); got != c.want {
			t.Errorf("%s: due %v", c.name, got)
		}
	}
}
