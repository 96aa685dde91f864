package transcripts

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestProjectDirs(t *testing.T) {
	if got := ProjectDirs("/c", "/data/meridian/workspace"); !slices.Equal(got, []string{"/c/projects/-data-meridian-workspace"}) {
		t.Fatalf("got %v", got)
	}
	if got := ConfigDir([]string{"HOME=/h"}); got != "/h/.claude" {
		t.Fatalf("config dir %s", got)
	}
	root := t.TempDir()
	long := "/" + string(slices.Repeat([]byte("x"), 250))
	dir := filepath.Join(root, "projects", "-"+string(slices.Repeat([]byte("x"), maxSlug-1))+"-abc123")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if got := ProjectDirs(root, long); !slices.Equal(got, []string{dir}) {
		t.Fatalf("long path: %v", got)
	}
}

// A pass deletes what is neither in use nor recent, a session's folder
// with it, and no more than its bound.
func TestPass(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	old := now.Add(-2 * time.Hour)
	write := func(name string, at time.Time) {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("{}\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"old-1", "old-2", "old-3", "kept", "live"} {
		write(id+".jsonl", old)
	}
	write("fresh.jsonl", now)
	write("notes.txt", old)
	if err := os.MkdirAll(filepath.Join(dir, "old-1", "tool-results"), 0o700); err != nil {
		t.Fatal(err)
	}
	c := &Cleaner{
		Dirs: func() []string { return []string{dir, filepath.Join(dir, "missing")} },
		InUse: func(context.Context) (map[string]bool, error) {
			return map[string]bool{"kept": true, "live": true}, nil
		},
		Grace:      time.Hour,
		MaxPerPass: 2,
		Now:        func() time.Time { return now },
		Log:        slog.New(slog.DiscardHandler),
	}
	if n, err := c.Pass(context.Background()); err != nil || n != 2 {
		t.Fatalf("first pass: %d %v", n, err)
	}
	if n, err := c.Pass(context.Background()); err != nil || n != 1 {
		t.Fatalf("second pass: %d %v", n, err)
	}
	var left []string
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		left = append(left, e.Name())
	}
	if !slices.Equal(left, []string{"fresh.jsonl", "kept.jsonl", "live.jsonl", "notes.txt"}) {
		t.Fatalf("left %v", left)
	}
}

// Unpin runs before the pass reads what is in use: a transcript it
// unpins goes in the same pass. A failing Unpin stops nothing.
func TestUnpinComesFirst(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-2 * time.Hour)
	for _, id := range []string{"copy", "current"} {
		p := filepath.Join(dir, id+".jsonl")
		if err := os.WriteFile(p, []byte("{}\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	pinned := map[string]bool{"copy": true, "current": true}
	fail := true
	c := &Cleaner{
		Dirs: func() []string { return []string{dir} },
		InUse: func(context.Context) (map[string]bool, error) {
			return maps.Clone(pinned), nil
		},
		Unpin: func(context.Context) (int, error) {
			if fail {
				return 0, errors.New("the store is away")
			}
			delete(pinned, "copy")
			return 1, nil
		},
		Grace: time.Hour, MaxPerPass: 10, Now: time.Now, Log: slog.New(slog.DiscardHandler),
	}
	if n, err := c.Pass(context.Background()); err != nil || n != 0 {
		t.Fatalf("with Unpin failing: %d %v", n, err)
	}
	fail = false
	if n, err := c.Pass(context.Background()); err != nil || n != 1 {
		t.Fatalf("after Unpin: %d %v", n, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "current.jsonl")); err != nil {
		t.Fatal("the pinned transcript went")
	}
}
