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

	"github.com/meridian-gw/meridian/internal/config"
	"github.com/meridian-gw/meridian/internal/httpapi"
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

// The docs keep up with the code: the development page's package list
// and the architecture's package table name every package, the
// development page names every command, and the architecture speaks of
// both backends.
func TestDocsNameEveryPackageAndCommand(t *testing.T) {
	root := testkit.RepoRoot(t)
	readme := readDoc(t, "docs/development.md")
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
			t.Errorf("docs/development.md's package list lacks %s", pkg)
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
			t.Errorf("docs/development.md's cmd/meridian line lacks the command %s: %q", name, cmdLine)
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

// Every flag of every command is named in the documentation: a flag
// added without it fails here. Hidden flags (tests' own) are left out.
func TestDocsNameEveryFlag(t *testing.T) {
	docs := readDoc(t, "README.md")
	pages, _ := filepath.Glob(filepath.Join(testkit.RepoRoot(t), "docs", "*.md"))
	for _, p := range pages {
		docs = append(docs, readDoc(t, p)...)
	}
	named := regexp.MustCompile(`--[a-z0-9][a-z0-9-]*`).FindAllString(string(docs), -1)
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if !f.Hidden && f.Name != "help" && !contains(named, "--"+f.Name) {
				t.Errorf("the docs never name %s's flag --%s", c.CommandPath(), f.Name)
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

// The configuration page's table has a row for every serve flag, and the
// row names the flag's environment twin.
func TestDocsConfigurationTableHasEveryTwin(t *testing.T) {
	rows := map[string]string{}
	for line := range strings.Lines(string(readDoc(t, "docs/configuration.md"))) {
		if m := regexp.MustCompile("^\\| `(--[a-z0-9-]+)`").FindStringSubmatch(line); m != nil {
			rows[m[1]] = line
		}
	}
	twinOf := regexp.MustCompile(`\((MERIDIAN_[A-Z0-9_]+)\)$`)
	var serveCmd *cobra.Command
	for _, c := range newRootCommand(nil, nil).Commands() {
		if c.Name() == "serve" {
			serveCmd = c
		}
	}
	serveCmd.LocalFlags().VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		row, ok := rows["--"+f.Name]
		if !ok {
			t.Errorf("docs/configuration.md has no row for --%s", f.Name)
			return
		}
		if m := twinOf.FindStringSubmatch(f.Usage); m != nil && !strings.Contains(row, "`"+m[1]+"`") {
			t.Errorf("docs/configuration.md's row for --%s does not name its twin %s", f.Name, m[1])
		}
	})
}

// Every route the server answers has its row in the endpoint table: a
// route added without it fails here.
func TestDocsNameEveryRoute(t *testing.T) {
	table := string(readDoc(t, "docs/endpoints.md"))
	for _, pattern := range httpapi.Routes() {
		doc := strings.NewReplacer("{key...}", "{key}", "/{$}", "/").Replace(pattern)
		if !strings.Contains(table, "`"+doc+"`") {
			t.Errorf("docs/endpoints.md does not name %s", doc)
		}
	}
}

func readDoc(t *testing.T, path string) []byte {
	t.Helper()
	if !filepath.IsAbs(path) {
		path = filepath.Join(testkit.RepoRoot(t), path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Every link between the docs reaches a page that exists and, with an
// anchor, a heading on it: moving a section cannot strand its links.
func TestDocsLinksResolve(t *testing.T) {
	root := testkit.RepoRoot(t)
	pages, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	pages = append(pages, filepath.Join(root, "README.md"))
	link := regexp.MustCompile(`\]\(([^)#\s]*)(#[^)\s]*)?\)`)
	for _, page := range pages {
		text := string(readDoc(t, page))
		for _, m := range link.FindAllStringSubmatch(text, -1) {
			target, anchor := m[1], strings.TrimPrefix(m[2], "#")
			if strings.Contains(target, "://") || (target != "" && !strings.HasSuffix(target, ".md")) {
				continue
			}
			dest := page
			if target != "" {
				dest = filepath.Join(filepath.Dir(page), target)
			}
			body, err := os.ReadFile(dest)
			if err != nil {
				t.Errorf("%s links to %s, which does not exist", filepath.Base(page), target)
				continue
			}
			if anchor != "" && !contains(anchors(string(body)), anchor) {
				t.Errorf("%s links to %s#%s, a heading that is not there", filepath.Base(page), target, anchor)
			}
		}
	}
}

// anchors are the heading ids GitHub gives a page's headings.
func anchors(page string) []string {
	var out []string
	fence := false
	for line := range strings.Lines(page) {
		if strings.HasPrefix(line, "```") {
			fence = !fence
		}
		if fence || !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.ToLower(strings.TrimSpace(strings.TrimLeft(line, "#")))
		h = regexp.MustCompile(`[^\p{L}\p{N}\- _]`).ReplaceAllString(h, "")
		out = append(out, strings.ReplaceAll(h, " ", "-"))
	}
	return out
}

// The settings file's example in docs/configuration.md is one the
// settings reader takes, with the values it shows.
func TestDocsSettingsExampleParses(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(testkit.RepoRoot(t), "docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```toml\n(# ~/.config/meridian/config.toml.*?)```").FindSubmatch(doc)
	if m == nil {
		t.Fatal("docs/configuration.md has no settings file example")
	}
	c, err := config.Parse(m[1])
	if err != nil {
		t.Fatalf("the example does not parse: %v", err)
	}
	if c.Harness.Claude.SpawnWatch.Enabled || c.Pricing["claude-sonnet-5"].Output != 15 {
		t.Fatalf("the example reads as %+v", c)
	}
}
