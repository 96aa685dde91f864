package desktop

import (
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/meridian-gw/meridian/internal/atomicfile"
	"github.com/meridian-gw/meridian/internal/notice"
)

// loadState reads the cooldowns kept by an earlier run; a missing or
// unreadable file is a fresh start (logged), never a refusal to run.
func loadState(path string, log *slog.Logger) *notice.State {
	s := &notice.State{}
	if path == "" {
		return s
	}
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return s
	case err != nil:
		log.Warn("could not read the notifications' cooldowns; starting afresh", "err", err)
		return s
	}
	if err := json.Unmarshal(b, s); err != nil {
		log.Warn("the notifications' cooldowns file is not JSON; starting afresh", "err", err)
		return &notice.State{}
	}
	return s
}

// saveState keeps the cooldowns, whole or not at all.
func saveState(path string, s *notice.State, log *slog.Logger) {
	if path == "" {
		return
	}
	b, err := json.Marshal(s)
	if err == nil {
		if err = os.MkdirAll(filepath.Dir(path), 0o700); err == nil {
			err = atomicfile.Write(path, b, 0o600)
		}
	}
	if err != nil {
		log.Warn("could not keep the notifications' cooldowns", "err", err)
	}
}
