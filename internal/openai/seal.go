package openai

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
)

// Sealer seals the model's thinking into a reasoning item's
// encrypted_content and opens it again when a client sends the item back.
// Sealing is authenticated encryption under a key only this gateway holds:
// a client can carry the thinking but can neither read nor forge it, so
// what is restored is exactly what the model produced, signature included.
type Sealer struct {
	aead cipher.AEAD
}

// sealPrefix marks content sealed by this gateway; anything else is
// somebody else's reasoning and is ignored.
const sealPrefix = "mrdn1."

// SealKeySize is the size of a sealing key.
const SealKeySize = 32

// NewSealer returns a sealer for a SealKeySize-byte key.
func NewSealer(key []byte) (*Sealer, error) {
	if len(key) != SealKeySize {
		return nil, fmt.Errorf("sealing key: %d bytes, want %d", len(key), SealKeySize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Sealer{aead: aead}, nil
}

// Thought is what a reasoning item carries: the model's thinking and its
// signature, or a redacted thinking block's data.
type Thought struct {
	Thinking  string `json:"t,omitempty"`
	Signature string `json:"s,omitempty"`
	Redacted  string `json:"r,omitempty"`
}

// Seal returns the thought as encrypted_content.
func (s *Sealer) Seal(t Thought) string {
	plain, _ := json.Marshal(t)
	nonce := make([]byte, s.aead.NonceSize())
	_, _ = rand.Read(nonce)
	sealed := s.aead.Seal(nonce, nonce, plain, []byte(sealPrefix))
	return sealPrefix + base64.RawURLEncoding.EncodeToString(sealed)
}

// Open returns the thought sealed in content, or ok=false when content was
// not sealed by this key (another gateway's, forged, or damaged).
func (s *Sealer) Open(content string) (t Thought, ok bool) {
	rest, found := strings.CutPrefix(content, sealPrefix)
	if !found {
		return Thought{}, false
	}
	sealed, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil || len(sealed) < s.aead.NonceSize() {
		return Thought{}, false
	}
	nonce, body := sealed[:s.aead.NonceSize()], sealed[s.aead.NonceSize():]
	plain, err := s.aead.Open(nil, nonce, body, []byte(sealPrefix))
	if err != nil || json.Unmarshal(plain, &t) != nil {
		return Thought{}, false
	}
	return t, true
}
