package launch

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
)

// Install writes a mod into its own folder under root and returns the
// folder: <root>/<name>/<version>-<digest>, named by the manifest's name
// and version and a digest of the files, so every build of the mod has
// its own folder and a session never sees one half written. The folder is
// filled under a temporary name and renamed into place; a folder already
// holding exactly these files is used as it is (the CLI adds files of its
// own, such as type definitions, which are left alone).
func Install(root string, mod fs.FS) (string, error) {
	name, version, err := manifest(mod)
	if err != nil {
		return "", err
	}
	files, err := read(mod)
	if err != nil {
		return "", err
	}
	parent := filepath.Join(root, name)
	dir := filepath.Join(parent, version+"-"+digest(files))
	if holds(dir, files) {
		return dir, nil
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", fmt.Errorf("install %s: %w", name, err)
	}
	tmp, err := os.MkdirTemp(parent, ".install-")
	if err != nil {
		return "", fmt.Errorf("install %s: %w", name, err)
	}
	defer os.RemoveAll(tmp) // gone after the rename; cleans up a failure
	for _, f := range files {
		p := filepath.Join(tmp, filepath.FromSlash(f.path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", fmt.Errorf("install %s: %w", name, err)
		}
		if err := os.WriteFile(p, f.data, 0o644); err != nil {
			return "", fmt.Errorf("install %s: %w", name, err)
		}
	}
	// Another meridian may have installed the same files meanwhile. A
	// folder under the final name that does not hold them was damaged:
	// move it aside, so the rename below replaces it whole.
	if holds(dir, files) {
		return dir, nil
	}
	if _, err := os.Stat(dir); err == nil {
		aside, err := os.MkdirTemp(parent, ".damaged-")
		if err != nil {
			return "", fmt.Errorf("install %s: %w", name, err)
		}
		defer os.RemoveAll(aside)
		if err := os.Rename(dir, filepath.Join(aside, "mod")); err != nil {
			return "", fmt.Errorf("install %s: move aside %s: %w", name, dir, err)
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		// Another meridian may have installed the same files first.
		if holds(dir, files) {
			return dir, nil
		}
		return "", fmt.Errorf("install %s: %w", name, err)
	}
	return dir, nil
}

type file struct {
	path string // slash-separated, relative to the mod
	data []byte
}

func read(mod fs.FS) ([]file, error) {
	var files []file
	err := fs.WalkDir(mod, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(mod, p)
		files = append(files, file{path: p, data: data})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read mod: %w", err)
	}
	return files, nil // in WalkDir's lexical order, so the digest is stable
}

func manifest(mod fs.FS) (name, version string, err error) {
	b, err := fs.ReadFile(mod, path.Join(".claude-plugin", "plugin.json"))
	if err != nil {
		return "", "", fmt.Errorf("read mod manifest: %w", err)
	}
	var m struct{ Name, Version string }
	if err := json.Unmarshal(b, &m); err != nil {
		return "", "", fmt.Errorf("mod manifest: %w", err)
	}
	if !fs.ValidPath(m.Name) || m.Name == "." || path.Base(m.Name) != m.Name || m.Version == "" || path.Base(m.Version) != m.Version {
		return "", "", errors.New("mod manifest: name and version must be plain folder names")
	}
	return m.Name, m.Version, nil
}

func digest(files []file) string {
	h := sha256.New()
	for _, f := range files {
		fmt.Fprintf(h, "%s\x00%d\x00", f.path, len(f.data))
		h.Write(f.data)
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}

// holds reports whether dir has exactly these files' contents (extra
// files are allowed).
func holds(dir string, files []file) bool {
	for _, f := range files {
		got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f.path)))
		if err != nil || !bytes.Equal(got, f.data) {
			return false
		}
	}
	return true
}
