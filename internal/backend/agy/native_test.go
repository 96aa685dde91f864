package agy

import (
	"os"
	"path/filepath"
	"testing"
)

// A subagent's workspace counts as inside only when it is, after
// symlinks: not a sibling with a shared prefix, not a way out by "..",
// not a link that leads out, not a relative path.
func TestSubagentWorkspaceMustBeInside(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	roots := []string{root}
	for path, want := range map[string]bool{
		"":                                   true,
		root:                                 true,
		filepath.Join(root, "a", "b"):        true,
		"file://" + filepath.Join(root, "a"): true,
		root + "-sibling":                    false,
		filepath.Join(root, "..", "x"):       false,
		filepath.Join(root, "link"):          false,
		outside:                              false,
		"relative/path":                      false,
		"/etc":                               false,
	} {
		if got := within(path, roots); got != want {
			t.Errorf("within(%q) = %v, want %v", path, got, want)
		}
	}
}

// Grants are exactly the two known ones.
func TestCheckGrants(t *testing.T) {
	if err := CheckGrants([]string{GrantBrowser, GrantSubagents}); err != nil {
		t.Fatal(err)
	}
	if err := CheckGrants([]string{"shell"}); err == nil {
		t.Fatal("an unknown grant was taken")
	}
}
