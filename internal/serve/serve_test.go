package serve

import (
	"strings"
	"testing"
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
