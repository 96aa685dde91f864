package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// goPackages lists the module's packages below internal/, by path.
func goPackages(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(filepath.Join(root, "internal"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if d.Name() == "testdata" {
			return filepath.SkipDir
		}
		files, _ := filepath.Glob(filepath.Join(path, "*.go"))
		for _, f := range files {
			if !strings.HasSuffix(f, "_test.go") {
				rel, _ := filepath.Rel(root, path)
				out = append(out, filepath.ToSlash(rel))
				break
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// The docs keep up with the code: the README's package list and the
// architecture's package table name every package, the README names
// every command, and the architecture speaks of both backends.
func TestDocsNameEveryPackageAndCommand(t *testing.T) {
	root := testkit.RepoRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	arch, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for line := range strings.Lines(string(readme)) {
		if f := strings.Fields(line); len(f) > 1 && (strings.HasPrefix(f[0], "internal/") || f[0] == "cmd/meridian") {
			listed = append(listed, f[0])
		}
	}
	for _, pkg := range goPackages(t, root) {
		if !contains(listed, pkg) {
			t.Errorf("the README's package list lacks %s", pkg)
		}
		if !strings.Contains(string(arch), "`"+pkg+"`") {
			t.Errorf("docs/architecture.md's package table lacks %s", pkg)
		}
	}
	var cmdLine string
	for line := range strings.Lines(string(readme)) {
		if strings.HasPrefix(line, "cmd/meridian ") {
			cmdLine = line
		}
	}
	for _, c := range newRootCommand(nil, nil).Commands() {
		if name := c.Name(); name != "help" && name != "completion" && !strings.Contains(cmdLine, name) {
			t.Errorf("the README's cmd/meridian line lacks the command %s: %q", name, cmdLine)
		}
	}
	for _, want := range []string{"Antigravity", "backend/agy", "agy"} {
		if !strings.Contains(string(arch), want) {
			t.Errorf("docs/architecture.md never mentions %s", want)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Every flag of every command is in the README: a flag added without its
// documentation fails here. Hidden flags (tests' own) are left out.
func TestDocsNameEveryFlag(t *testing.T) {
	root := testkit.RepoRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	named := regexp.MustCompile(`--[a-z0-9][a-z0-9-]*`).FindAllString(string(readme), -1)
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if !f.Hidden && f.Name != "help" && !contains(named, "--"+f.Name) {
				t.Errorf("the README never names %s's flag --%s", c.CommandPath(), f.Name)
			}
		})
		for _, sub := range c.Commands() {
			if !sub.Hidden {
				walk(sub)
			}
		}
	}
	walk(newRootCommand(nil, nil))
}
