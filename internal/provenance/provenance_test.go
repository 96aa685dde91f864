package provenance

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"strings"
	"testing"
	"time"
)

// DSSE's own example of its encoding.
func TestPAE(t *testing.T) {
	if got := string(PAE("http://example.com/HelloWorld", []byte("hello world"))); got != "DSSEv1 29 http://example.com/HelloWorld 11 hello world" {
		t.Fatalf("PAE = %q", got)
	}
}

const sums = `0d8e5a2a5f1b7c9e3b4d6f8a0c2e4a6b8d0f2a4c6e8a0b2d4f6a8c0e2a4b6d8f  meridian_1.2.3_linux_amd64.tar.gz
a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90  meridian_1.2.3_amd64.deb
`

// A statement sealed with the release's key opens with its public key and
// names each artifact with its digest; a changed payload, another key or a
// digest it does not list is refused.
func TestSealAndOpen(t *testing.T) {
	pub, key, _ := ed25519.GenerateKey(rand.Reader)
	subjects, err := Subjects([]byte(sums))
	if err != nil || len(subjects) != 2 {
		t.Fatalf("subjects %v %v", subjects, err)
	}
	commit := strings.Repeat("ab", 20)
	st, err := NewStatement(subjects, Build{Version: "1.2.3", Commit: commit, Go: "go1.26.0", Started: time.Unix(1, 0), Finished: time.Unix(2, 0)})
	if err != nil {
		t.Fatal(err)
	}
	env, err := Seal(st, key)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Open(env, pub)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Names("meridian_1.2.3_amd64.deb", "A1B2C3D4E5F60718293A4B5C6D7E8F90A1B2C3D4E5F60718293A4B5C6D7E8F90") ||
		got.Names("meridian_1.2.3_amd64.deb", strings.Repeat("0", 64)) || got.Names("other.tar.gz", subjects[0].Digest["sha256"]) {
		t.Fatal("Names does not match exactly the listed name and digest")
	}
	if p := got.Predicate.BuildDefinition; p.ExternalParameters["commit"] != commit || p.ResolvedDependencies[0].Digest["gitCommit"] != commit || p.InternalParameters["go"] != "go1.26.0" {
		t.Fatalf("build definition %+v", p)
	}

	other, _, _ := ed25519.GenerateKey(rand.Reader)
	if _, err := Open(env, other); err == nil {
		t.Fatal("another key opened the envelope")
	}
	payload, _ := base64.StdEncoding.DecodeString(env.Payload)
	tampered := env
	tampered.Payload = base64.StdEncoding.EncodeToString([]byte(strings.Replace(string(payload), "1.2.3", "1.2.4", 1)))
	if _, err := Open(tampered, pub); err == nil {
		t.Fatal("a changed statement opened")
	}
}

func TestBadInput(t *testing.T) {
	for _, bad := range []string{"", "nothex  name\n", "abcd  name\n", strings.Repeat("a", 64) + " one-space\n", strings.Repeat("a", 64) + "  \n"} {
		if _, err := Subjects([]byte(bad)); err == nil {
			t.Errorf("Subjects(%q) took it", bad)
		}
	}
	if _, err := NewStatement(nil, Build{Version: "1"}); err == nil {
		t.Error("a statement without its commit")
	}
	if _, err := ParsePrivateKey([]byte("not a key")); err == nil {
		t.Error("a private key from nothing")
	}
	pub, key, _ := ed25519.GenerateKey(rand.Reader)
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	if k, err := ParsePrivateKey(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})); err != nil || !k.Equal(key) {
		t.Errorf("the PKCS #8 key: %v", err)
	}
	pder, _ := x509.MarshalPKIXPublicKey(pub)
	if k, err := ParsePublicKey(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pder})); err != nil || !k.Equal(pub) {
		t.Errorf("the PKIX public key: %v", err)
	}
}
