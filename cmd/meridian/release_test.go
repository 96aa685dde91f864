package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	intoto "github.com/meridian-gw/meridian/internal/provenance"
	"github.com/meridian-gw/meridian/internal/testkit"
)

// The release build of .goreleaser.yaml, for this machine's target only
// (scripts/release builds the whole matrix): a snapshot with archives and
// packages. The .deb lists the binary, man pages and completions, and
// unpacked into a temporary root its binary runs, names the snapshot's
// version and commit, and its man page renders. Signed with a throwaway
// key, the release's provenance names every archive and package by its
// digest and the commit, and its signature verifies with openssl too.
func TestReleaseSnapshot(t *testing.T) {
	t.Parallel()
	goreleaser := os.Getenv("MERIDIAN_TEST_GORELEASER")
	if goreleaser == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("MERIDIAN_TEST_GORELEASER is not set: ./scripts/test installs goreleaser (scripts/install-goreleaser)")
		}
		t.Skip("set MERIDIAN_TEST_GORELEASER (./scripts/install-goreleaser prints it) to build the release snapshot")
	}
	for _, tool := range []string{"git", "dpkg-deb", "tar"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed: %v", tool, err)
		}
	}
	root := testkit.RepoRoot(t)
	if runtime.GOOS != "linux" {
		t.Skip("the packages are built and unpacked on linux")
	}
	config, err := os.ReadFile(filepath.Join(root, ".goreleaser.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dist := filepath.Join(t.TempDir(), "dist")
	one := strings.NewReplacer(
		"goos: [linux, darwin, windows]", "goos: [linux]",
		"goarch: [amd64, arm64]", "goarch: ["+runtime.GOARCH+"]",
	).Replace(string(config)) + "\ndist: " + dist + "\n"
	if one == string(config)+"\ndist: "+dist+"\n" {
		t.Fatal("the test no longer narrows .goreleaser.yaml's matrix: update the replacements")
	}
	cfg := filepath.Join(t.TempDir(), "goreleaser.yaml")
	if err := os.WriteFile(cfg, []byte(one), 0o644); err != nil {
		t.Fatal(err)
	}
	commit, err := exec.Command("git", "-C", root, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	full, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	pub, key, _ := ed25519.GenerateKey(rand.Reader)
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	keyFile := filepath.Join(t.TempDir(), "release.key")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(goreleaser, "release", "--snapshot", "--clean", "--skip=publish", "--config", cfg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "MERIDIAN_COMMIT="+strings.TrimSpace(string(commit)), "MERIDIAN_FULL_COMMIT="+strings.TrimSpace(string(full)),
		"MERIDIAN_SIGNING_KEY="+keyFile, "MERIDIAN_GORELEASER_VERSION="+filepath.Base(filepath.Dir(goreleaser)))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("goreleaser: %v\n%s", err, out)
	}

	debs, _ := filepath.Glob(filepath.Join(dist, "*.deb"))
	rpms, _ := filepath.Glob(filepath.Join(dist, "*.rpm"))
	archives, _ := filepath.Glob(filepath.Join(dist, "*.tar.gz"))
	if len(debs) != 1 || len(rpms) != 1 || len(archives) != 1 {
		t.Fatalf("dist holds %v %v %v", debs, rpms, archives)
	}
	list, err := exec.Command("dpkg-deb", "-c", debs[0]).Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"./usr/bin/meridian", "./usr/bin/meridian-desktop", "./usr/share/man/man1/meridian.1.gz", "./usr/share/man/man1/meridian-setup.1.gz",
		"./usr/share/bash-completion/completions/meridian", "./usr/share/zsh/vendor-completions/_meridian",
		"./usr/share/fish/vendor_completions.d/meridian.fish", "./usr/share/doc/meridian/README.md"} {
		if !strings.Contains(string(list), want+"\n") {
			t.Errorf("the .deb lacks %s:\n%s", want, list)
		}
	}
	unpacked := t.TempDir()
	if out, err := exec.Command("dpkg-deb", "-x", debs[0], unpacked).CombinedOutput(); err != nil {
		t.Fatalf("dpkg-deb -x: %v %s", err, out)
	}
	bin := filepath.Join(unpacked, "usr", "bin", "meridian")
	if out, err := exec.Command(bin, "--help").CombinedOutput(); err != nil || !strings.Contains(string(out), "setup") {
		t.Fatalf("meridian --help from the package: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").CombinedOutput()
	if want := strings.TrimSpace(string(commit)); err != nil || !strings.Contains(string(out), "-snapshot") || !strings.Contains(string(out), want) {
		t.Fatalf("meridian version from the package = %q (%v), want the snapshot's version and commit %s", out, err, want)
	}
	// The companion starts only a meridian of its own version: the two
	// say the same one.
	desk, err := exec.Command(filepath.Join(unpacked, "usr", "bin", "meridian-desktop"), "version").CombinedOutput()
	if version := strings.Fields(string(out)); err != nil || len(version) < 2 || strings.TrimSpace(string(desk)) != "meridian-desktop "+version[1] {
		t.Fatalf("meridian-desktop version from the package = %q (%v), meridian's %q", desk, err, out)
	}
	page := filepath.Join(unpacked, "usr", "share", "man", "man1", "meridian-setup.1.gz")
	man := exec.Command("man", "-l", page)
	man.Env = append(os.Environ(), "MANPAGER=cat", "MANWIDTH=100")
	if out, err := man.CombinedOutput(); err != nil || !strings.Contains(string(out), "meridian setup CLIENT") || !strings.Contains(string(out), "--dry-run") {
		t.Fatalf("man -l meridian-setup.1.gz: %v\n%s", err, out)
	}
	tarList, err := exec.Command("tar", "-tzf", archives[0]).Output()
	if err != nil || !strings.Contains(string(tarList), "man/meridian.1.gz") || !strings.Contains(string(tarList), "completions/meridian.bash") {
		t.Fatalf("the archive: %v\n%s", err, tarList)
	}
	checkProvenance(t, dist, pub, strings.TrimSpace(string(full)), append(append(debs, rpms...), archives...))
}

// checkProvenance opens the release's signed statement with the key's
// public half and finds each artifact in it with its digest; openssl,
// given the envelope's encoding and signature, verifies it as well.
func checkProvenance(t *testing.T, dist string, pub ed25519.PublicKey, commit string, artifacts []string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dist, "checksums.txt.intoto.json"))
	if err != nil {
		t.Fatalf("no provenance beside checksums.txt: %v", err)
	}
	var env intoto.Envelope
	if err := json.Unmarshal(data, &env); err != nil {
		t.Fatal(err)
	}
	st, err := intoto.Open(env, pub)
	if err != nil {
		t.Fatal(err)
	}
	if d := st.Predicate.BuildDefinition; d.ExternalParameters["commit"] != commit || !strings.HasSuffix(d.ExternalParameters["version"], "-snapshot") ||
		!strings.HasPrefix(d.InternalParameters["goreleaser"], "v2.") || d.InternalParameters["go"] == "" {
		t.Fatalf("the statement's build: %+v, want commit %s", d, commit)
	}
	for _, a := range artifacts {
		body, err := os.ReadFile(a)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(body)
		if !st.Names(filepath.Base(a), hex.EncodeToString(sum[:])) {
			t.Errorf("the provenance does not name %s with its digest", filepath.Base(a))
		}
	}
	dir := t.TempDir()
	payload, _ := base64.StdEncoding.DecodeString(env.Payload)
	sig, _ := base64.StdEncoding.DecodeString(env.Signatures[0].Sig)
	pubDER, _ := x509.MarshalPKIXPublicKey(pub)
	for name, b := range map[string][]byte{"pae": intoto.PAE(env.PayloadType, payload), "sig": sig,
		"pub.pem": pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	verify := exec.Command("openssl", "pkeyutl", "-verify", "-pubin", "-inkey", "pub.pem", "-rawin", "-in", "pae", "-sigfile", "sig")
	verify.Dir = dir
	if out, err := verify.CombinedOutput(); err != nil || !strings.Contains(string(out), "Signature Verified Successfully") {
		t.Fatalf("openssl does not verify the provenance's signature: %v %s", err, out)
	}
	// The tool's own check, as a user runs it on a downloaded artifact.
	tool := exec.Command("go", "run", "./cmd/meridian-provenance", "verify", "-pub", filepath.Join(dir, "pub.pem"),
		"-envelope", filepath.Join(dist, "checksums.txt.intoto.json"), artifacts[0])
	tool.Dir = testkit.RepoRoot(t)
	out, err := tool.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "an artifact of release") {
		t.Fatalf("meridian-provenance verify: %v %s", err, out)
	}
}
