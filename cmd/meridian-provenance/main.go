// Command meridian-provenance writes a release's signed provenance (run by
// goreleaser's signing step on checksums.txt) and checks one against the
// release's public key and artifacts (docs/development.md, Provenance).
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/meridian-gw/meridian/internal/provenance"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "meridian-provenance:", err)
		os.Exit(1)
	}
}

const usage = `usage:
  meridian-provenance seal -checksums FILE -key KEY.pem -out FILE -version V -commit SHA [-started TIME] [-goreleaser V] [-builder ID]
  meridian-provenance verify -pub KEY.pub.pem -envelope FILE ARTIFACT…
(docs/development.md, Provenance)`

func run(args []string, out io.Writer) error {
	if len(args) == 0 {
		return errors.New(usage)
	}
	switch args[0] {
	case "seal":
		return seal(args[1:])
	case "verify":
		return verify(args[1:], out)
	}
	return errors.New(usage)
}

func seal(args []string) error {
	fs := flag.NewFlagSet("seal", flag.ContinueOnError)
	checksums := fs.String("checksums", "", "the release's checksums file")
	keyPath := fs.String("key", "", "the release's Ed25519 private key (PKCS #8 PEM)")
	outPath := fs.String("out", "", "where the signed statement goes")
	var b provenance.Build
	fs.StringVar(&b.Version, "version", "", "the release's version")
	fs.StringVar(&b.Commit, "commit", "", "the commit it was built from")
	started := fs.String("started", "", "when the build started (RFC 3339)")
	fs.StringVar(&b.Goreleaser, "goreleaser", "", "goreleaser's version")
	fs.StringVar(&b.Builder, "builder", "", "who or what ran the build (default: this host's name)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *checksums == "" || *keyPath == "" || *outPath == "" {
		return errors.New("seal needs -checksums, -key and -out")
	}
	sums, err := os.ReadFile(*checksums)
	if err != nil {
		return err
	}
	subjects, err := provenance.Subjects(sums)
	if err != nil {
		return err
	}
	pemKey, err := os.ReadFile(*keyPath)
	if err != nil {
		return err
	}
	key, err := provenance.ParsePrivateKey(pemKey)
	if err != nil {
		return err
	}
	if *started != "" {
		if b.Started, err = time.Parse(time.RFC3339, *started); err != nil {
			return fmt.Errorf("-started: %w", err)
		}
	}
	if b.Builder == "" {
		host, _ := os.Hostname()
		b.Builder = "host:" + host
	}
	b.Go, b.Finished = runtime.Version(), time.Now()
	st, err := provenance.NewStatement(subjects, b)
	if err != nil {
		return err
	}
	env, err := provenance.Seal(st, key)
	if err != nil {
		return err
	}
	data, err := json.MarshalIndent(env, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(*outPath, append(data, '\n'), 0o644)
}

func verify(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	pubPath := fs.String("pub", "", "the release's Ed25519 public key (PEM)")
	envPath := fs.String("envelope", "", "the release's signed statement")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *pubPath == "" || *envPath == "" || fs.NArg() == 0 {
		return errors.New("verify needs -pub, -envelope and the artifacts to check")
	}
	pemPub, err := os.ReadFile(*pubPath)
	if err != nil {
		return err
	}
	pub, err := provenance.ParsePublicKey(pemPub)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(*envPath)
	if err != nil {
		return err
	}
	var env provenance.Envelope
	if err := json.Unmarshal(data, &env); err != nil {
		return fmt.Errorf("the envelope: %w", err)
	}
	st, err := provenance.Open(env, pub)
	if err != nil {
		return err
	}
	p := st.Predicate.BuildDefinition.ExternalParameters
	for _, a := range fs.Args() {
		sum, err := fileSHA256(a)
		if err != nil {
			return err
		}
		if !st.Names(filepath.Base(a), sum) {
			return fmt.Errorf("%s (sha256 %s) is not an artifact of release %s", filepath.Base(a), sum, p["version"])
		}
		fmt.Fprintf(out, "%s: an artifact of release %s, built from %s\n", filepath.Base(a), p["version"], p["commit"])
	}
	return nil
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
