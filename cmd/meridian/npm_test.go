package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// The npm packages (scripts/npm-pack), for this machine's platform:
// installed offline from their tarballs into a fresh project, the
// launcher runs the platform package's binary.
func TestNPMPackageInstallsOfflineAndRuns(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("npm"); err != nil {
		t.Fatalf("npm is needed: %v", err)
	}
	platform := map[string]string{"linux/amd64": "linux-x64", "linux/arm64": "linux-arm64", "darwin/amd64": "darwin-x64", "darwin/arm64": "darwin-arm64"}[runtime.GOOS+"/"+runtime.GOARCH]
	if platform == "" {
		t.Skipf("no npm package for %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	bin := buildBinary(t)
	out := filepath.Join(t.TempDir(), "npm")
	pack := exec.Command(filepath.Join(testkit.RepoRoot(t), "scripts", "npm-pack"), "v9.8.7", out, platform+"="+bin)
	if b, err := pack.CombinedOutput(); err != nil {
		t.Fatalf("npm-pack: %v\n%s", err, b)
	}
	tarballs, _ := filepath.Glob(filepath.Join(out, "*.tgz"))
	if len(tarballs) != 2 {
		t.Fatalf("tarballs %v", tarballs)
	}
	project := t.TempDir()
	if err := os.WriteFile(filepath.Join(project, "package.json"), []byte(`{"name":"try-meridian","version":"1.0.0","private":true}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	install := exec.Command("npm", append([]string{"install", "--offline", "--no-audit", "--no-fund", "--cache", cache}, tarballs...)...)
	install.Dir = project
	install.Env = append(os.Environ(), "npm_config_registry=http://127.0.0.1:9/") // nothing may be fetched
	if b, err := install.CombinedOutput(); err != nil {
		t.Fatalf("npm install: %v\n%s", err, b)
	}
	version := exec.Command(filepath.Join(project, "node_modules", ".bin", "meridian"), "version")
	version.Env = append(os.Environ(), "MERIDIAN_UPDATE_CHECK=off")
	b, err := version.CombinedOutput()
	if err != nil || !strings.HasPrefix(string(b), "meridian ") {
		t.Fatalf("meridian version through npm: %v %q", err, b)
	}
	if code := exec.Command(filepath.Join(project, "node_modules", ".bin", "meridian"), "no-such-command").Run(); code == nil {
		t.Fatal("a failing command exited 0 through the launcher")
	}
}
