// Package clientsetup points a coding client's own configuration at
// Meridian: it finds the files where the client reads them, prepares
// every edit before writing any, keeps a private backup of what it
// replaces, and can put the backup back.
package clientsetup

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/meridian-gw/meridian/internal/confedit"
	"github.com/meridian-gw/meridian/internal/suggest"
)

// Change is one file as it is and as setup would leave it.
type Change struct {
	Path    string
	Existed bool
	Before  []byte
	After   []byte
	Mode    fs.FileMode // as it was; kept for undo
	Private bool        // it holds a key: written readable by its owner only
}

// Plan is everything setup would do for one client.
type Plan struct {
	Client  Client
	Changes []Change // only files whose text changes
	Notes   []string // what the user does next
}

// Lookup finds a client by name; a near miss is answered with the name
// meant (claude → claude-code).
func Lookup(name string) (Client, error) {
	var names []string
	for _, c := range Clients() {
		if c.Name == name {
			return c, nil
		}
		names = append(names, c.Name)
	}
	if near := suggest.Nearest(name, append(names, "env")); near != "" {
		return Client{}, fmt.Errorf("no client %q: did you mean %s? setup knows %s, and env", name, near, strings.Join(names, ", "))
	}
	return Client{}, fmt.Errorf("no client %q: setup knows %s, and env", name, strings.Join(names, ", "))
}

// Prepare reads the client's files and computes every edit; it writes
// nothing. Malformed or conflicting input is refused naming its file and
// line, and then nothing is written for any file.
func Prepare(c Client, t Target, env map[string]string, home string) (Plan, error) {
	l := locator{env: env, home: home, exists: func(p string) bool { _, err := os.Stat(p); return err == nil }}
	files, notes := c.plan(t, l)
	p := Plan{Client: c, Notes: notes}
	for _, f := range files {
		ch, err := prepareFile(f)
		if err != nil {
			return Plan{}, err
		}
		if (!ch.Existed && len(ch.After) > 0) || string(ch.Before) != string(ch.After) {
			p.Changes = append(p.Changes, ch)
		}
	}
	return p, nil
}

func prepareFile(f fileEdit) (Change, error) {
	ch := Change{Path: f.path, Mode: 0o600}
	info, err := os.Stat(f.path)
	switch {
	case err == nil && !info.Mode().IsRegular():
		return Change{}, fmt.Errorf("%s: not a regular file", f.path)
	case err == nil:
		if ch.Before, err = os.ReadFile(f.path); err != nil {
			return Change{}, err
		}
		ch.Existed, ch.Mode = true, info.Mode().Perm()
	case !errors.Is(err, fs.ErrNotExist):
		return Change{}, err
	}
	ch.Private = f.secret
	if f.format == verbatim {
		ch.After = f.content
		return ch, nil
	}
	edit := confedit.JSONC
	if f.format == tomlFile {
		edit = confedit.TOML
	}
	after, err := edit(ch.Before, f.edits)
	if err != nil {
		var e *confedit.Error
		if errors.As(err, &e) {
			return Change{}, fmt.Errorf("%s:%d: %s; the file is left as it is", f.path, e.Line, e.Msg)
		}
		return Change{}, fmt.Errorf("%s: %w", f.path, err)
	}
	ch.After = after
	return ch, nil
}

// Diff is the plan as a unified diff, "" when nothing would change.
func (p Plan) Diff() string {
	var b strings.Builder
	for _, ch := range p.Changes {
		b.WriteString(confedit.Diff(ch.Path, ch.Before, ch.After, ch.Existed))
	}
	return b.String()
}
