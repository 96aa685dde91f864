// Package config reads meridian's settings file: TOML, in the user's
// config dir. A missing file means the defaults; an unknown key is an
// error, so a misspelt setting is not silently ignored.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/meridian-gw/meridian/internal/pricing"
)

// Config is every setting the file may hold.
type Config struct {
	Harness Harness `toml:"harness"`
	// Pricing overrides or adds list prices (US dollars per million
	// tokens) by model id prefix, for the cost estimates.
	Pricing map[string]pricing.Price `toml:"pricing"`
	// Aliases map a model name a client sends to the model (and effort)
	// that answers it, on this host; `meridian alias add` keeps them for
	// every host instead.
	Aliases map[string]Alias `toml:"aliases"`
	// Hooks are the operator's request hooks, run in this order on each
	// model request ([[hooks]] tables).
	Hooks []Hook `toml:"hooks"`
}

// Hook is one request hook of the settings file: a command or a
// WebAssembly module that observes or transforms requests or answers.
type Hook struct {
	Name  string `toml:"name"`
	Stage string `toml:"stage"`
	Mode  string `toml:"mode"`
	// Command is the program and its arguments; Wasm a WASI module's
	// file, run with Args.
	Command []string `toml:"command"`
	Wasm    string   `toml:"wasm"`
	Args    []string `toml:"args"`
	Env     []string `toml:"env"`
	APIs    []string `toml:"apis"`
	// Timeout is a Go duration ("2s").
	Timeout    string `toml:"timeout"`
	MaxBytes   int    `toml:"max_bytes"`
	Concurrent int    `toml:"concurrent"`
	MemoryMiB  int    `toml:"memory_mib"`
}

// Alias is one model alias of the settings file.
type Alias struct {
	Model  string `toml:"model"`
	Effort string `toml:"effort"`
}

// Harness holds the settings of the agent CLIs meridian launches for a lead.
type Harness struct {
	Claude Claude `toml:"claude"`
}

// Claude configures `meridian claude`.
type Claude struct {
	SpawnWatch SpawnWatch `toml:"spawn_watch"`
}

// SpawnWatch configures the meridian-spawn-watch mod.
type SpawnWatch struct {
	// Enabled loads the mod into interactive sessions.
	Enabled bool `toml:"enabled"`
}

// Default is the configuration without a file.
func Default() Config {
	var c Config
	c.Harness.Claude.SpawnWatch.Enabled = true
	return c
}

// Parse reads a settings file's text over the defaults.
func Parse(text []byte) (Config, error) {
	c := Default()
	dec := toml.NewDecoder(bytes.NewReader(text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		var strict *toml.StrictMissingError
		if errors.As(err, &strict) && len(strict.Errors) > 0 {
			e := strict.Errors[0]
			row, _ := e.Position()
			return Config{}, fmt.Errorf("line %d: unknown setting %s", row, strings.Join(e.Key(), "."))
		}
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, col := de.Position()
			return Config{}, fmt.Errorf("line %d, column %d: %s", row, col, de.Error())
		}
		return Config{}, err
	}
	return c, nil
}

// Load reads the settings file at path; a missing file is the defaults.
func Load(path string) (Config, error) {
	text, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Default(), nil
	}
	if err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	c, err := Parse(text)
	if err != nil {
		return Config{}, fmt.Errorf("config %s: %w", path, err)
	}
	return c, nil
}

// Path is where the settings file lives: MERIDIAN_CONFIG, else
// meridian/config.toml under XDG_CONFIG_HOME or ~/.config.
func Path(env map[string]string) string {
	if p := env["MERIDIAN_CONFIG"]; p != "" {
		return p
	}
	if d := env["XDG_CONFIG_HOME"]; d != "" {
		return filepath.Join(d, "meridian", "config.toml")
	}
	if home := env["HOME"]; home != "" {
		return filepath.Join(home, ".config", "meridian", "config.toml")
	}
	return filepath.Join(os.TempDir(), "meridian", "config.toml")
}
