package clientsetup

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/meridian-gw/meridian/internal/atomicfile"
)

// manifest records, per client, what setup replaced: the first backup of
// each file is kept until undo, so undo always returns to the state
// before Meridian's first setup, however often setup ran since.
type manifest struct {
	Files []entry `json:"files"`
}

type entry struct {
	Path    string      `json:"path"`
	Existed bool        `json:"existed"`
	Backup  string      `json:"backup,omitempty"` // file name in the client's backup folder
	Mode    fs.FileMode `json:"mode"`
	Written string      `json:"written"` // sha256 of what setup last wrote
}

func (m *manifest) find(path string) *entry {
	for i := range m.Files {
		if m.Files[i].Path == path {
			return &m.Files[i]
		}
	}
	return nil
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func readManifest(dir string) (manifest, error) {
	var m manifest
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("setup backup record %s: %w", filepath.Join(dir, "manifest.json"), err)
	}
	return m, nil
}

// Apply writes the plan: backups and their record first (0600, in a 0700
// folder under backups), then each file replaced whole by a rename, so a
// client never reads a half-written config.
func (p Plan) Apply(backups string) error {
	if len(p.Changes) == 0 {
		return nil
	}
	dir := filepath.Join(backups, p.Client.Name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("setup backups: %w", err)
	}
	m, err := readManifest(dir)
	if err != nil {
		return err
	}
	for _, ch := range p.Changes {
		e := m.find(ch.Path)
		if e == nil {
			m.Files = append(m.Files, entry{Path: ch.Path, Existed: ch.Existed, Mode: ch.Mode})
			e = &m.Files[len(m.Files)-1]
			if ch.Existed {
				e.Backup = strconv.Itoa(len(m.Files)) + "-" + filepath.Base(ch.Path)
				if err := atomicfile.Write(filepath.Join(dir, e.Backup), ch.Before, 0o600); err != nil {
					return fmt.Errorf("backup of %s: %w", ch.Path, err)
				}
			}
		}
		e.Written = digest(ch.After)
	}
	record, _ := json.MarshalIndent(m, "", "  ")
	if err := atomicfile.Write(filepath.Join(dir, "manifest.json"), record, 0o600); err != nil {
		return fmt.Errorf("setup backup record: %w", err)
	}
	for _, ch := range p.Changes {
		if err := os.MkdirAll(filepath.Dir(ch.Path), 0o700); err != nil {
			return err
		}
		mode := ch.Mode
		if ch.Private {
			mode &= 0o600
		}
		if err := atomicfile.Write(ch.Path, ch.After, mode); err != nil {
			return err
		}
	}
	return nil
}

// Undo puts back every file setup changed for the client, removing those
// it created. A file changed since setup wrote it is refused, naming it,
// and then nothing is restored.
func Undo(c Client, backups string) ([]string, error) {
	dir := filepath.Join(backups, c.Name)
	m, err := readManifest(dir)
	if err != nil {
		return nil, err
	}
	if len(m.Files) == 0 {
		return nil, fmt.Errorf("setup has not changed %s's configuration (no backup in %s)", c.Title, dir)
	}
	for _, e := range m.Files {
		now, err := os.ReadFile(e.Path)
		if errors.Is(err, fs.ErrNotExist) && !e.Existed {
			continue
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		if err != nil || digest(now) != e.Written {
			return nil, fmt.Errorf("%s was changed after setup wrote it; undo would lose that change, so nothing is restored (the original is %s)", e.Path, backupName(dir, e))
		}
	}
	var restored []string
	for _, e := range m.Files {
		if !e.Existed {
			if err := os.Remove(e.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return restored, err
			}
			restored = append(restored, e.Path+" (removed: setup created it)")
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Backup))
		if err != nil {
			return restored, fmt.Errorf("backup of %s: %w", e.Path, err)
		}
		if err := atomicfile.Write(e.Path, b, e.Mode); err != nil {
			return restored, err
		}
		restored = append(restored, e.Path)
	}
	return restored, os.RemoveAll(dir)
}

func backupName(dir string, e entry) string {
	if !e.Existed {
		return "that it did not exist"
	}
	return filepath.Join(dir, e.Backup)
}
