// Package transcripts deletes the claude CLI's session transcripts that
// nothing needs any more. Every resume forks a new CLI session, so the
// CLI's project folder for the gateway's workspace gains a transcript with
// nearly every turn that is not served by a live process; only the newest
// of a conversation (its published mapping), those of live processes and
// those of running turns are ever read again.
package transcripts

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// Defaults for Cleaner.
const (
	DefaultGrace      = 24 * time.Hour
	DefaultEvery      = time.Hour
	DefaultMaxPerPass = 1000
)

// maxSlug is where the CLI cuts a long project folder name (and adds a
// digest we do not reproduce).
const maxSlug = 200

var unsafeChars = regexp.MustCompile(`[^a-zA-Z0-9]`)

// ProjectDirs returns the CLI's project folders for sessions run in cwd:
// <config dir>/projects/<cwd with every other character a dash>. The CLI
// shortens names over 200 characters with a digest suffix; for those,
// every folder with the shortened prefix is returned.
func ProjectDirs(configDir, cwd string) []string {
	slug := unsafeChars.ReplaceAllString(cwd, "-")
	root := filepath.Join(configDir, "projects")
	if len(slug) <= maxSlug {
		return []string{filepath.Join(root, slug)}
	}
	dirs, _ := filepath.Glob(filepath.Join(root, slug[:maxSlug]+"-*"))
	return dirs
}

// ConfigDir is where the CLI keeps its state for an environment (as
// os.Environ gives it; the last entry of a name wins): CLAUDE_CONFIG_DIR,
// else ~/.claude.
func ConfigDir(environ []string) string {
	var config, home string
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, "CLAUDE_CONFIG_DIR="); ok {
			config = v
		} else if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			home = v
		}
	}
	if config != "" {
		return config
	}
	return filepath.Join(home, ".claude")
}

// Cleaner deletes unneeded transcripts in a set of project folders.
type Cleaner struct {
	Dirs func() []string // the project folders, looked up each pass
	// InUse lists the session ids still needed: published mappings, live
	// processes, running turns.
	InUse func(context.Context) (map[string]bool, error)
	// Grace keeps every transcript written to within it, whatever InUse
	// says: a turn of another meridian on the same data dir may be using it.
	Grace      time.Duration
	MaxPerPass int
	// Unpin, if set, runs first in each pass: the mappings it removes
	// (copies of conversations that moved to another profile) stop
	// pinning their transcripts, which the pass may then delete. It
	// reports how many it removed.
	Unpin func(context.Context) (int, error)
	Now   func() time.Time
	Log   *slog.Logger
}

// Pass deletes up to MaxPerPass transcripts that are not in use and were
// last written before the grace period (a session's <id>.jsonl and its
// <id>/ folder of attachments alike), and reports how many it deleted.
func (c *Cleaner) Pass(ctx context.Context) (int, error) {
	if c.Unpin != nil {
		switch n, err := c.Unpin(ctx); {
		case err != nil && ctx.Err() == nil:
			c.Log.Warn("could not prune conversations' copies under other profiles", "err", err)
		case n > 0:
			c.Log.Info("pruned conversations' copies under profiles they left", "count", n)
		}
	}
	inUse, err := c.InUse(ctx)
	if err != nil {
		return 0, fmt.Errorf("transcripts in use: %w", err)
	}
	cutoff := c.Now().Add(-c.Grace)
	deleted := 0
	for _, dir := range c.Dirs() {
		entries, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return deleted, fmt.Errorf("transcripts: %w", err)
		}
		for _, e := range entries {
			id, ok := strings.CutSuffix(e.Name(), ".jsonl")
			if !ok || e.IsDir() || inUse[id] {
				continue
			}
			info, err := e.Info()
			if err != nil || info.ModTime().After(cutoff) {
				continue
			}
			if deleted >= c.MaxPerPass {
				return deleted, nil
			}
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return deleted, fmt.Errorf("transcripts: %w", err)
			}
			// The session's own folder (tool results, subagents), if any.
			_ = os.RemoveAll(filepath.Join(dir, id))
			deleted++
		}
	}
	return deleted, nil
}

// Run makes a pass at once and then every period until ctx ends.
func (c *Cleaner) Run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		n, err := c.Pass(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			c.Log.Warn("could not clean up claude transcripts", "err", err)
		case n > 0:
			c.Log.Info("deleted claude transcripts no conversation needs", "count", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
