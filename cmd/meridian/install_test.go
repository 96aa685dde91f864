package main

import (
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// `go install` of the command works from an empty GOPATH, offline (the
// modules come from the module cache, as from the proxy): the binary it
// puts in GOBIN names its version, starts, and serves its pages, whose
// assets are embedded.
func TestGoInstallRuns(t *testing.T) {
	t.Parallel()
	root := testkit.RepoRoot(t)
	modcache, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	gopath := t.TempDir()
	cmd := exec.Command("go", "install", "./cmd/meridian")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOPATH="+gopath, "GOBIN=", "GOMODCACHE="+strings.TrimSpace(string(modcache)),
		"GOFLAGS=-mod=readonly", "GOPROXY=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go install: %v\n%s", err, out)
	}
	bin := filepath.Join(gopath, "bin", "meridian")
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "meridian ") {
		t.Fatalf("meridian version: %v %q", err, out)
	}
	// Built in a git clone, it names the commit (the go tool stamps it;
	// it does not look into a worktree, whose .git is a file).
	if fi, err := os.Stat(filepath.Join(root, ".git")); err == nil && fi.IsDir() {
		head, err := exec.Command("git", "-C", root, "rev-parse", "--short=12", "HEAD").Output()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(out), strings.TrimSpace(string(head))) {
			t.Fatalf("meridian version says %q, not the commit %s", out, head)
		}
	}
	proc, addr, _ := startBinary(t, bin)
	defer func() { _ = proc.Process.Kill(); _ = proc.Wait() }()
	// No claude here: health answers, saying so; the landing page and
	// its assets are in the binary.
	if status, body := testkit.Get(t, "http://"+addr+"/health"); status != http.StatusServiceUnavailable || !strings.Contains(body, `"found":false`) {
		t.Fatalf("GET /health from the installed binary: %d %.200s", status, body)
	}
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/", nil)
	req.Header.Set("Accept", "text/html")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), "<html") {
		t.Fatalf("the landing page from the installed binary: %d %.200s", resp.StatusCode, page)
	}
}

// The container installs the claude CLI the tests pin.
func TestDockerfilePinsTheTestedCLI(t *testing.T) {
	root := testkit.RepoRoot(t)
	pin, err := os.ReadFile(filepath.Join(root, "scripts", "claude-version"))
	if err != nil {
		t.Fatal(err)
	}
	dockerfile, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "ARG CLAUDE_VERSION=" + strings.TrimSpace(string(pin)) + "\n"; !strings.Contains(string(dockerfile), want) {
		t.Fatalf("the Dockerfile lacks %q", want)
	}
}
