package launch

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/meridian-gw/meridian/mods"
)

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		args []string
		tty  bool
		want Mode
	}{
		{nil, true, Interactive},
		{[]string{"fix the build"}, true, Interactive},
		{[]string{"--model", "opus", "--resume", "abc"}, true, Interactive},
		{nil, false, Print},
		{[]string{"-p", "hi"}, true, Print},
		{[]string{"--print", "hi"}, true, Print},
		{[]string{"--model", "opus", "-p"}, true, Print},
		{[]string{"--", "-p"}, true, Interactive},
		{[]string{"mcp", "list"}, true, Other},
		{[]string{"plugin", "validate", "."}, true, Other},
		{[]string{"--version"}, true, Other},
		{[]string{"-h"}, false, Other},
		{[]string{"say mcp"}, true, Interactive},
	} {
		if got := Classify(tc.args, tc.tty); got != tc.want {
			t.Errorf("Classify(%q, tty=%v) = %s, want %s", tc.args, tc.tty, got, tc.want)
		}
	}
}

func TestArgs(t *testing.T) {
	args := []string{"--model", "opus", "hello"}
	if got := Args(args, Interactive, "/m/a"); !slices.Equal(got, []string{"--plugin-dir", "/m/a", "--model", "opus", "hello"}) {
		t.Errorf("interactive: %q", got)
	}
	for _, m := range []Mode{Print, Other} {
		if got := Args(args, m, "/m/a"); !slices.Equal(got, args) {
			t.Errorf("%s: %q", m, got)
		}
	}
	if got := Args(args, Interactive); !slices.Equal(got, args) {
		t.Errorf("no mods: %q", got)
	}
}

func testMod(body string) fstest.MapFS {
	return fstest.MapFS{
		".claude-plugin/plugin.json": {Data: []byte(`{"name":"demo","version":"1.2.0"}`)},
		"hooks/register.ts":          {Data: []byte(body)},
		"tsconfig.json":              {Data: []byte("{}\n")},
	}
}

func TestInstall(t *testing.T) {
	root := t.TempDir()
	dir, err := Install(root, testMod("one"))
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(dir) != filepath.Join(root, "demo") || !strings.HasPrefix(filepath.Base(dir), "1.2.0-") {
		t.Fatalf("installed at %s", dir)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "hooks", "register.ts")); string(b) != "one" {
		t.Fatalf("register.ts = %q", b)
	}

	// The same files again: the same folder, left as it is (with what the
	// CLI laid into it).
	laid := filepath.Join(dir, ".claude-plugin", "types", "index.d.ts")
	if err := os.MkdirAll(filepath.Dir(laid), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(laid, []byte("types"), 0o644); err != nil {
		t.Fatal(err)
	}
	again, err := Install(root, testMod("one"))
	if err != nil || again != dir {
		t.Fatalf("reinstall = %s, %v", again, err)
	}
	if _, err := os.Stat(laid); err != nil {
		t.Fatalf("a reinstall of the same files touched the folder: %v", err)
	}

	// Other files: a folder of their own; the first stays for the sessions
	// that loaded it.
	other, err := Install(root, testMod("two"))
	if err != nil || other == dir {
		t.Fatalf("changed mod installed at %s (first at %s): %v", other, dir, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "hooks", "register.ts")); err != nil {
		t.Fatal("the older version was removed")
	}

	// A damaged folder is replaced whole.
	if err := os.WriteFile(filepath.Join(dir, "hooks", "register.ts"), []byte("edited"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "tsconfig.json")); err != nil {
		t.Fatal(err)
	}
	fixed, err := Install(root, testMod("one"))
	if err != nil || fixed != dir {
		t.Fatalf("repair = %s, %v", fixed, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "hooks", "register.ts")); string(b) != "one" {
		t.Fatalf("after repair register.ts = %q", b)
	}
	if _, err := os.Stat(laid); !os.IsNotExist(err) {
		t.Fatalf("the damaged folder was patched, not replaced: %v", err)
	}
	noTemporaries(t, filepath.Join(root, "demo"), 2)
}

// Installs racing each other and a reader: whenever the folder exists it
// holds every file, and every installer gets the same folder.
func TestInstallConcurrent(t *testing.T) {
	root := t.TempDir()
	mod := testMod(strings.Repeat("x", 1<<20))
	files, err := read(mod)
	if err != nil {
		t.Fatal(err)
	}
	name, version, _ := manifest(mod)
	want := filepath.Join(root, name, version+"-"+digest(files))
	stop := make(chan struct{})
	var partial bool
	var reader sync.WaitGroup
	reader.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := os.Stat(want); err == nil && !holds(want, files) {
				partial = true
			}
		}
	})
	var wg sync.WaitGroup
	dirs := make([]string, 8)
	errs := make([]error, 8)
	for i := range dirs {
		wg.Go(func() { dirs[i], errs[i] = Install(root, mod) })
	}
	wg.Wait()
	close(stop)
	reader.Wait()
	for i := range dirs {
		if errs[i] != nil || dirs[i] != want {
			t.Fatalf("installer %d: %s, %v", i, dirs[i], errs[i])
		}
	}
	if partial {
		t.Fatal("a reader saw a half-written mod folder")
	}
	noTemporaries(t, filepath.Join(root, name), 1)
}

func TestInstallFails(t *testing.T) {
	root := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(root, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Install(root, testMod("one")); err == nil {
		t.Fatal("installed under a file")
	}
	bad := testMod("one")
	bad[".claude-plugin/plugin.json"] = &fstest.MapFile{Data: []byte(`{"name":"../up","version":"1"}`)}
	if _, err := Install(t.TempDir(), bad); err == nil {
		t.Fatal("installed a mod named ../up")
	}
}

// The embedded spawn-watch mod: the files a session loads, not its tests.
func TestSpawnWatchEmbedded(t *testing.T) {
	var paths []string
	if err := fs.WalkDir(mods.SpawnWatch(), ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			paths = append(paths, p)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	want := []string{".claude-plugin/plugin.json", "README.md", "hooks/hooks.json", "hooks/register.ts", "tsconfig.json"}
	if !slices.Equal(paths, want) {
		t.Fatalf("embedded files = %q, want %q", paths, want)
	}
	dir, err := Install(t.TempDir(), mods.SpawnWatch())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(dir, string(filepath.Separator)+"meridian-spawn-watch"+string(filepath.Separator)+"0.1.0-") {
		t.Fatalf("installed at %s", dir)
	}
}

func noTemporaries(t *testing.T, parent string, folders int) {
	t.Helper()
	entries, err := os.ReadDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != folders {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Fatalf("%s holds %q, want %d version folders and nothing else", parent, names, folders)
	}
}
