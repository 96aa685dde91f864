// Package provenance writes and checks a release's provenance: an in-toto
// statement (SLSA provenance v1) naming every artifact of the release by
// its SHA-256 and how the release was built, in a DSSE envelope signed
// with the release's Ed25519 key. It does no I/O: the release's tool
// (cmd/meridian-provenance, run by goreleaser's signing step) reads the
// checksums and the key and writes the envelope.
package provenance

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The statement's and envelope's types, as in-toto and SLSA name them.
const (
	StatementType = "https://in-toto.io/Statement/v1"
	PredicateType = "https://slsa.dev/provenance/v1"
	PayloadType   = "application/vnd.in-toto+json"
	// BuildType names how Meridian's releases are built (docs/development.md).
	BuildType = "https://github.com/meridian-gw/meridian/blob/main/docs/development.md#provenance"
	// Repository is the source the releases are built from.
	Repository = "https://github.com/meridian-gw/meridian"
)

// Subject is one artifact of the release.
type Subject struct {
	Name   string            `json:"name"`
	Digest map[string]string `json:"digest"`
}

// Build is how one release was built.
type Build struct {
	Version, Commit string
	// Go and Goreleaser are the toolchains' versions; Builder names who
	// or what ran the build (a machine, a CI job).
	Go, Goreleaser, Builder string
	Started, Finished       time.Time
}

// Statement is the in-toto statement.
type Statement struct {
	Type          string    `json:"_type"`
	Subject       []Subject `json:"subject"`
	PredicateType string    `json:"predicateType"`
	Predicate     Predicate `json:"predicate"`
}

// Predicate is SLSA provenance v1, as much of it as a release has.
type Predicate struct {
	BuildDefinition struct {
		BuildType            string            `json:"buildType"`
		ExternalParameters   map[string]string `json:"externalParameters"`
		InternalParameters   map[string]string `json:"internalParameters"`
		ResolvedDependencies []Subject         `json:"resolvedDependencies"`
	} `json:"buildDefinition"`
	RunDetails struct {
		Builder struct {
			ID string `json:"id"`
		} `json:"builder"`
		Metadata struct {
			StartedOn  time.Time `json:"startedOn,omitzero"`
			FinishedOn time.Time `json:"finishedOn,omitzero"`
		} `json:"metadata"`
	} `json:"runDetails"`
}

// Subjects reads a checksums file as goreleaser writes it: one line per
// artifact, its SHA-256 in hex, two spaces, its name.
func Subjects(checksums []byte) ([]Subject, error) {
	var out []Subject
	sc := bufio.NewScanner(bytes.NewReader(checksums))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		sum, name, ok := strings.Cut(line, "  ")
		if b, err := hex.DecodeString(sum); !ok || err != nil || len(b) != sha256.Size || strings.TrimSpace(name) == "" {
			return nil, fmt.Errorf("provenance: checksums line %d is not \"<sha256>  <name>\"", n)
		}
		out = append(out, Subject{Name: strings.TrimSpace(name), Digest: map[string]string{"sha256": strings.ToLower(sum)}})
	}
	if len(out) == 0 {
		return nil, errors.New("provenance: the checksums name no artifact")
	}
	return out, nil
}

// NewStatement is the release's statement: its artifacts and its build.
func NewStatement(subjects []Subject, b Build) (Statement, error) {
	if b.Version == "" || b.Commit == "" {
		return Statement{}, errors.New("provenance: a release's version and commit are needed")
	}
	s := Statement{Type: StatementType, Subject: subjects, PredicateType: PredicateType}
	d := &s.Predicate.BuildDefinition
	d.BuildType = BuildType
	d.ExternalParameters = map[string]string{"repository": Repository, "version": b.Version, "commit": b.Commit}
	d.InternalParameters = map[string]string{}
	if b.Go != "" {
		d.InternalParameters["go"] = b.Go
	}
	if b.Goreleaser != "" {
		d.InternalParameters["goreleaser"] = b.Goreleaser
	}
	dep := Subject{Name: "git+" + Repository, Digest: map[string]string{}}
	if _, err := hex.DecodeString(b.Commit); err == nil && len(b.Commit) == 40 {
		dep.Digest["gitCommit"] = b.Commit
	}
	d.ResolvedDependencies = []Subject{dep}
	r := &s.Predicate.RunDetails
	r.Builder.ID = b.Builder
	r.Metadata.StartedOn, r.Metadata.FinishedOn = b.Started.UTC(), b.Finished.UTC()
	return s, nil
}

// Envelope is a DSSE envelope.
type Envelope struct {
	PayloadType string      `json:"payloadType"`
	Payload     string      `json:"payload"` // base64
	Signatures  []Signature `json:"signatures"`
}

// Signature is one signature of an envelope.
type Signature struct {
	KeyID string `json:"keyid"`
	Sig   string `json:"sig"` // base64
}

// PAE is DSSE's pre-authentication encoding of a payload: what is signed.
func PAE(payloadType string, payload []byte) []byte {
	var b bytes.Buffer
	b.WriteString("DSSEv1 ")
	b.WriteString(strconv.Itoa(len(payloadType)))
	b.WriteByte(' ')
	b.WriteString(payloadType)
	b.WriteByte(' ')
	b.WriteString(strconv.Itoa(len(payload)))
	b.WriteByte(' ')
	b.Write(payload)
	return b.Bytes()
}

// KeyID names a public key: the SHA-256 of its PKIX encoding, in hex.
func KeyID(pub ed25519.PublicKey) string {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "" // an Ed25519 key always encodes
	}
	sum := sha256.Sum256(der)
	return hex.EncodeToString(sum[:])
}

// Seal signs a statement into an envelope.
func Seal(s Statement, key ed25519.PrivateKey) (Envelope, error) {
	payload, err := json.Marshal(s)
	if err != nil {
		return Envelope{}, fmt.Errorf("provenance: %w", err)
	}
	sig := ed25519.Sign(key, PAE(PayloadType, payload))
	return Envelope{PayloadType: PayloadType, Payload: base64.StdEncoding.EncodeToString(payload),
		Signatures: []Signature{{KeyID: KeyID(key.Public().(ed25519.PublicKey)), Sig: base64.StdEncoding.EncodeToString(sig)}}}, nil
}

// Open checks an envelope's signature by pub and returns its statement.
func Open(e Envelope, pub ed25519.PublicKey) (Statement, error) {
	if e.PayloadType != PayloadType {
		return Statement{}, fmt.Errorf("provenance: the envelope holds %q, not an in-toto statement", e.PayloadType)
	}
	payload, err := base64.StdEncoding.DecodeString(e.Payload)
	if err != nil {
		return Statement{}, errors.New("provenance: the envelope's payload is not base64")
	}
	id := KeyID(pub)
	signed := slices.ContainsFunc(e.Signatures, func(s Signature) bool {
		sig, err := base64.StdEncoding.DecodeString(s.Sig)
		return err == nil && (s.KeyID == "" || s.KeyID == id) && ed25519.Verify(pub, PAE(e.PayloadType, payload), sig)
	})
	if !signed {
		return Statement{}, errors.New("provenance: no signature of the envelope verifies with this key")
	}
	var s Statement
	if err := json.Unmarshal(payload, &s); err != nil {
		return Statement{}, fmt.Errorf("provenance: the statement: %w", err)
	}
	if s.Type != StatementType || s.PredicateType != PredicateType {
		return Statement{}, fmt.Errorf("provenance: a %s statement of %s, not SLSA provenance v1", s.Type, s.PredicateType)
	}
	return s, nil
}

// Names reports whether the statement names an artifact called name with
// this SHA-256 (hex).
func (s Statement) Names(name, sha256hex string) bool {
	return slices.ContainsFunc(s.Subject, func(sub Subject) bool {
		return sub.Name == name && strings.EqualFold(sub.Digest["sha256"], sha256hex)
	})
}

// ParsePrivateKey reads an Ed25519 private key in PKCS #8 PEM, as
// `openssl genpkey -algorithm ed25519` writes it.
func ParsePrivateKey(pemBytes []byte) (ed25519.PrivateKey, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil || block.Type != "PRIVATE KEY" {
		return nil, errors.New("provenance: the signing key is not a PKCS #8 PEM private key")
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("provenance: the signing key: %w", err)
	}
	ek, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, errors.New("provenance: the signing key is not an Ed25519 key")
	}
	return ek, nil
}

// ParsePublicKey reads an Ed25519 public key in PKIX PEM, as `openssl pkey
// -pubout` writes it.
func ParsePublicKey(pemBytes []byte) (ed25519.PublicKey, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil || block.Type != "PUBLIC KEY" {
		return nil, errors.New("provenance: the public key is not a PEM public key")
	}
	k, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("provenance: the public key: %w", err)
	}
	ek, ok := k.(ed25519.PublicKey)
	if !ok {
		return nil, errors.New("provenance: the public key is not an Ed25519 key")
	}
	return ek, nil
}
