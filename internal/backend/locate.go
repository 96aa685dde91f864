package backend

import (
	"errors"
	"fmt"
	"io/fs"
	"os/exec"
	"strings"
)

// Locate finds a CLI's binary (a path, or a name on PATH), or returns an
// error wrapping ErrUnavailable that says how to install it (hint).
func Locate(cli, path, hint string) (string, error) {
	p, err := exec.LookPath(path)
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("%w: %s not found (%q): %s", ErrUnavailable, cli, path, hint)
		}
		return "", fmt.Errorf("%w: %s %q is not usable: %v", ErrUnavailable, cli, path, err)
	}
	return p, nil
}

// StripForeignEnv is env without the variables of the other CLIs and of
// Meridian itself, which a CLI must not see: a leaked ANTHROPIC_BASE_URL
// or CLAUDECODE means nothing to agy or codex and must not reach what
// they run, and a user's AGY_* or ANTIGRAVITY_* settings are not the
// gateway's.
func StripForeignEnv(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(k, "CLAUDE"), strings.HasPrefix(k, "ANTHROPIC"), strings.HasPrefix(k, "MERIDIAN"),
			strings.HasPrefix(k, "ANTIGRAVITY_"), strings.HasPrefix(k, "AGY_"):
			continue
		}
		out = append(out, kv)
	}
	return out
}
