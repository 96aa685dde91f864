package transcripts

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// DefaultMaxShared bounds a shared transcript, compressed: a longer one
// is not shared, and its conversation replays on another host.
const DefaultMaxShared = 8 << 20

// Keeper keeps each conversation's shared transcript (the store's
// conversations).
type Keeper interface {
	ShareTranscript(ctx context.Context, profile, key, sessionID string, data []byte) (bool, error)
	Transcript(ctx context.Context, profile, key string) (sessionID string, data []byte, ok bool, err error)
}

// Shared copies the transcripts of one profile's CLI to the store after
// each published turn, so that another host can write one back into its
// own CLI's folder and resume the conversation from what the CLI itself
// wrote, not from a replay.
type Shared struct {
	Keeper    Keeper
	Profile   string
	ConfigDir string
	Max       int // compressed bytes (0: DefaultMaxShared)
	Log       *slog.Logger

	mu      sync.Mutex
	pending map[string]chan struct{} // conversations being copied now
	wg      sync.WaitGroup
}

// path is where the CLI keeps session id's transcript for sessions run in
// cwd; "" when the folder's name is one the CLI shortens with a digest.
func (s *Shared) path(cwd, id string) string {
	slug := unsafeChars.ReplaceAllString(cwd, "-")
	if len(slug) > maxSlug || id == "" || filepath.Base(id) != id {
		return ""
	}
	return filepath.Join(s.ConfigDir, "projects", slug, id+".jsonl")
}

// Save copies the transcript of session id (run in cwd) of conversation
// key to the store, in the background: a turn never waits for it. A copy
// already under way for the conversation is waited for first, so copies
// land in order.
func (s *Shared) Save(key, id, cwd string) {
	path := s.path(cwd, id)
	if path == "" {
		return
	}
	s.mu.Lock()
	if s.pending == nil {
		s.pending = map[string]chan struct{}{}
	}
	before := s.pending[key]
	done := make(chan struct{})
	s.pending[key] = done
	s.mu.Unlock()
	s.wg.Go(func() {
		defer func() {
			s.mu.Lock()
			if s.pending[key] == done {
				delete(s.pending, key)
			}
			s.mu.Unlock()
			close(done)
		}()
		if before != nil {
			<-before
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.save(ctx, key, id, path); err != nil {
			s.logger().Warn("could not share the conversation's transcript; on another host it replays", "conversation", key, "err", err)
		}
	})
}

func (s *Shared) save(ctx context.Context, key, id, path string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read the transcript: %w", err)
	}
	// The CLI may be writing its next line: share whole lines only.
	if i := bytes.LastIndexByte(raw, '\n'); i >= 0 {
		raw = raw[:i+1]
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(raw); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	if max := s.max(); buf.Len() > max {
		return fmt.Errorf("the transcript is %d bytes compressed, more than the %d shared", buf.Len(), max)
	}
	if _, err := s.Keeper.ShareTranscript(ctx, s.Profile, key, id, buf.Bytes()); err != nil {
		return err
	}
	return nil
}

func (s *Shared) logger() *slog.Logger {
	if s.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Log
}

func (s *Shared) max() int {
	if s.Max > 0 {
		return s.Max
	}
	return DefaultMaxShared
}

// Restore makes sure the transcript of session id of conversation key is
// where the CLI looks for it when run in cwd: there already, or written
// there from the store. It reports false when the store holds none of that
// session (never shared, damaged, or of an older session): the
// conversation then replays.
func (s *Shared) Restore(ctx context.Context, key, id, cwd string) (bool, error) {
	path := s.path(cwd, id)
	if path == "" {
		return false, nil
	}
	if _, err := os.Stat(path); err == nil {
		return true, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	session, data, ok, err := s.Keeper.Transcript(ctx, s.Profile, key)
	if err != nil || !ok || session != id {
		return false, err
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return false, nil // damaged: replay
	}
	raw, err := io.ReadAll(io.LimitReader(zr, 64*int64(s.max())))
	if err != nil {
		return false, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return false, err
	}
	// Written whole under another name and renamed: a CLI never reads
	// half of it.
	tmp, err := os.CreateTemp(filepath.Dir(path), ".restore-*")
	if err != nil {
		return false, err
	}
	_, werr := tmp.Write(raw)
	if err := errors.Join(werr, tmp.Close()); err != nil {
		_ = os.Remove(tmp.Name())
		return false, err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		_ = os.Remove(tmp.Name())
		return false, err
	}
	return true, nil
}

// Close waits for the copies under way.
func (s *Shared) Close() { s.wg.Wait() }
