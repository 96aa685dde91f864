// Package lineage decides how a conversation a client sends relates to the
// conversation a CLI session already holds, from structured digests of the
// messages. It is pure: no I/O, no caches, no clocks.
package lineage

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"slices"
	"sort"
	"strings"

	"github.com/meridian-gw/meridian/internal/anthropic"
)

// Digest identifies one message (or one block) by its content.
type Digest [16]byte

// String renders a digest as hex.
func (d Digest) String() string { return hex.EncodeToString(d[:]) }

// ParseDigest reads a digest rendered by String.
func ParseDigest(s string) (Digest, bool) {
	var d Digest
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(d) {
		return d, false
	}
	copy(d[:], b)
	return d, true
}

// Domains keep a message digest from ever equalling a block digest.
const (
	domainMessage = 'M'
	domainBlock   = 'B'
)

// MessageDigest digests a message: its role and every block in order, each
// with its boundary. Thinking blocks, cache_control hints and whitespace
// around text do not count: the API itself treats the first two as outside
// the conversation's content, and clients trim the last.
func MessageDigest(m anthropic.Message) Digest {
	buf := appendField([]byte{domainMessage}, m.Role)
	for _, b := range m.Content {
		if !ignored(b) {
			buf = appendBlock(buf, b)
		}
	}
	return sum(buf)
}

func sum(buf []byte) Digest {
	full := sha256.Sum256(buf)
	var d Digest
	copy(d[:], full[:])
	return d
}

// BlockDigests digests each block of a message on its own (ignored blocks
// excluded), so that a message that only gained blocks can be recognised.
func BlockDigests(m anthropic.Message) []Digest {
	var out []Digest
	for _, b := range m.Content {
		if ignored(b) {
			continue
		}
		out = append(out, sum(appendBlock([]byte{domainBlock}, b)))
	}
	return out
}

// Digests digests every message.
func Digests(msgs []anthropic.Message) []Digest {
	out := make([]Digest, len(msgs))
	for i, m := range msgs {
		out[i] = MessageDigest(m)
	}
	return out
}

// ignored says a block is outside the conversation's content: thinking,
// and text that is only whitespace, which clients drop when they send the
// history back (the API refuses empty text blocks).
func ignored(b anthropic.ContentBlock) bool {
	switch b.Type {
	case anthropic.BlockThinking, anthropic.BlockRedactedThinking:
		return true
	case anthropic.BlockText:
		return strings.TrimSpace(b.Text) == ""
	}
	return false
}

// appendBlock writes a block's canonical form: a type tag, then the fields
// that make it what it is, each length-prefixed so no two different blocks
// share an encoding.
func appendBlock(buf []byte, b anthropic.ContentBlock) []byte {
	buf = appendField(buf, b.Type)
	switch b.Type {
	case anthropic.BlockText:
		// Clients trim what they send back (Crush trims every text; the
		// API refuses an assistant turn that ends in whitespace), so the
		// text's surrounding whitespace does not count.
		buf = appendField(buf, strings.TrimSpace(b.Text))
	case anthropic.BlockToolUse, anthropic.BlockServerToolUse:
		buf = appendField(buf, b.ID)
		buf = appendField(buf, b.Name)
		buf = appendField(buf, string(canonicalJSON(b.Input)))
	case anthropic.BlockWebSearchToolResult:
		// What a search found, as a client echoes it: clients differ in
		// how they write the pages' empty content and age, and in the
		// caller they add.
		buf = appendField(buf, b.ToolUseID)
		buf = appendField(buf, searchFindings(b.Raw))
	case anthropic.BlockToolResult:
		buf = appendField(buf, b.ToolUseID)
		if b.IsError {
			buf = append(buf, 1)
		} else {
			buf = append(buf, 0)
		}
		kept := slices.DeleteFunc(slices.Clone(b.Content), ignored)
		buf = binary.AppendUvarint(buf, uint64(len(kept)))
		for _, c := range kept {
			buf = appendBlock(buf, c)
		}
	default:
		// Media and block types this package does not model: the whole
		// block, keys sorted, cache_control left out.
		buf = appendField(buf, string(canonicalJSON(b.Raw)))
	}
	return buf
}

func appendField(buf []byte, s string) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(s)))
	return append(buf, s...)
}

// canonicalJSON re-encodes a JSON value with object keys sorted and
// insignificant whitespace removed; top-level cache_control is dropped.
func canonicalJSON(raw json.RawMessage) []byte {
	if len(raw) == 0 {
		return nil
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return raw
	}
	if m, ok := v.(map[string]any); ok {
		delete(m, "cache_control")
	}
	var out bytes.Buffer
	writeCanonical(&out, v)
	return out.Bytes()
}

func writeCanonical(out *bytes.Buffer, v any) {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				out.WriteByte(',')
			}
			kb, _ := json.Marshal(k)
			out.Write(kb)
			out.WriteByte(':')
			writeCanonical(out, x[k])
		}
		out.WriteByte('}')
	case []any:
		out.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				out.WriteByte(',')
			}
			writeCanonical(out, e)
		}
		out.WriteByte(']')
	default:
		b, _ := json.Marshal(x)
		out.Write(b)
	}
}

// searchFindings is a web search result block's pages (their URLs and
// titles) or its error code, canonically.
func searchFindings(raw json.RawMessage) string {
	var b struct {
		Content json.RawMessage `json:"content"`
	}
	_ = json.Unmarshal(raw, &b)
	var pages []struct {
		URL   string `json:"url"`
		Title string `json:"title"`
	}
	if json.Unmarshal(b.Content, &pages) == nil {
		out := []byte{'p'}
		for _, p := range pages {
			out = appendField(appendField(out, p.URL), p.Title)
		}
		return string(out)
	}
	var e struct {
		ErrorCode string `json:"error_code"`
	}
	_ = json.Unmarshal(b.Content, &e)
	return "e" + e.ErrorCode
}
