// Package adapter knows the clients: which one sent a request, which
// conversation it belongs to, whether a subagent sent it, and where the
// client works. A session header is identity, never authentication.
package adapter

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"regexp"
	"strings"

	"github.com/meridian-gw/meridian/internal/anthropic"
	"github.com/meridian-gw/meridian/internal/lineage"
)

// Mode is whether a request comes from the user's own agent or a helper.
type Mode uint8

// Agent modes.
const (
	Primary Mode = iota
	Subagent
)

func (m Mode) String() string {
	if m == Subagent {
		return "subagent"
	}
	return "primary"
}

// Identity is what a request says about its conversation.
type Identity struct {
	// Client is the adapter's name.
	Client string
	// Key names the conversation; "" means the request carries no identity
	// and is served on its own, remembered by nobody.
	Key string
	// Fingerprint reports that Key was derived from the content (working
	// directory and first user message) rather than sent by the client.
	Fingerprint bool
	Mode        Mode
	// Agent names a non-primary agent ("title", a subagent id); its
	// conversation key is scoped with it.
	Agent string
	// Parent is the key of the conversation that started this one, when the
	// client says.
	Parent string
	// Cwd is the client's working directory, when it says.
	Cwd string
}

// Adapter is one client's behaviour.
type Adapter interface {
	Name() string
	Identify(h http.Header, req *anthropic.MessagesRequest) Identity
}

// Names of the adapters, as x-meridian-agent accepts them.
const (
	ClaudeCode = "claude-code"
	OpenCode   = "opencode"
	Crush      = "crush"
	Pi         = "pi"
	Droid      = "droid"
	ForgeCode  = "forgecode"
	LiteLLM    = "litellm"
	Polytoken  = "polytoken"
	Codex      = "codex"
	Generic    = "generic"
)

// ByName returns the adapter with a name, or nil.
func ByName(name string) Adapter {
	switch strings.ToLower(strings.TrimSpace(name)) {
	case ClaudeCode, "claudecode", "claude":
		return claudeCode{}
	case OpenCode:
		return openCode{}
	case Crush:
		return crush{}
	case Pi:
		return pi{}
	case Droid:
		return droid{}
	case ForgeCode:
		return forgeCode{}
	case LiteLLM:
		return liteLLM{}
	case Polytoken:
		return polytoken{}
	case Codex:
		return codex{}
	case Generic:
		return generic{}
	}
	return nil
}

// Detect picks the adapter for a request: an explicit x-meridian-agent
// header first, then headers only one client sends, then the User-Agent,
// then signs in the body, then the generic fingerprinting adapter.
func Detect(h http.Header, req *anthropic.MessagesRequest) Adapter {
	if a := ByName(h.Get("X-Meridian-Agent")); a != nil {
		return a
	}
	switch {
	case h.Get("X-Claude-Code-Session-Id") != "":
		return claudeCode{}
	case len(h.Values("X-Polytoken-Session")) > 0:
		return polytoken{}
	case h.Get("X-Opencode-Session") != "":
		return openCode{}
	case strings.HasPrefix(h.Get("Originator"), "codex"):
		return codex{}
	case hasPrefixedHeader(h, "X-Litellm-"):
		return liteLLM{}
	}
	ua := h.Get("User-Agent")
	switch {
	case strings.HasPrefix(ua, "claude-cli/"):
		return claudeCode{}
	case strings.HasPrefix(ua, "opencode/"):
		return openCode{}
	case strings.HasPrefix(ua, "Charm-Crush/"):
		return crush{}
	case strings.HasPrefix(ua, "factory-cli/"):
		return droid{}
	case strings.HasPrefix(ua, "litellm/"):
		return liteLLM{}
	case strings.HasPrefix(ua, "codex_"), strings.HasPrefix(ua, "codex-"):
		return codex{}
	}
	if h.Get("X-Session-Affinity") != "" {
		return openCode{} // OpenCode's default headers; Crush was caught by its agent
	}
	system := strings.Join(req.System, "\n")
	switch {
	case strings.Contains(system, "inside pi, a coding agent harness"):
		return pi{}
	case strings.Contains(system, "<current_working_directory>"):
		return forgeCode{}
	}
	return generic{}
}

func hasPrefixedHeader(h http.Header, prefix string) bool {
	for k := range h {
		if strings.HasPrefix(k, prefix) {
			return true
		}
	}
	return false
}

// Fingerprint derives a conversation key from the working directory and
// the first user message: requests of one conversation all begin the same.
// It returns "" when there is no user message to go by.
func Fingerprint(cwd string, msgs []anthropic.Message) string {
	return scopedFingerprint("", cwd, msgs)
}

// scopedFingerprint is a fingerprint that callers with different scopes
// never share; an empty scope is the plain fingerprint.
func scopedFingerprint(scope, cwd string, msgs []anthropic.Message) string {
	for _, m := range msgs {
		if m.Role != anthropic.RoleUser {
			continue
		}
		d := lineage.MessageDigest(m)
		seed := cwd + "\x00"
		if scope != "" {
			seed = scope + "\x00" + seed
		}
		sum := sha256.Sum256(append([]byte(seed), d[:]...))
		return "fp:" + hex.EncodeToString(sum[:8])
	}
	return ""
}

// Hints are identity signals a request carries in its body outside the
// Messages API's fields: an OpenAI request's metadata, prompt_cache_key and
// user.
type Hints struct {
	// Session names the conversation explicitly (metadata.session_id or
	// metadata.conversation_id).
	Session string
	// Scope keeps fingerprinted conversations of different callers apart
	// (prompt_cache_key, user). It never joins conversations: one cache key
	// may serve many of them.
	Scope string
}

// WithHints settles an identity the client's headers left to a
// fingerprint: an explicit session in the body names the conversation, a
// scope separates the fingerprint.
func (id Identity) WithHints(h Hints, req *anthropic.MessagesRequest) Identity {
	if !id.Fingerprint {
		return id
	}
	if s := strings.TrimSpace(h.Session); s != "" {
		id.Key, id.Fingerprint = s, false
		return scoped(id)
	}
	if h.Scope != "" {
		id.Key = scopedFingerprint(h.Scope, id.Cwd, req.Messages)
	}
	return id
}

// Of scopes the identity to the API key caller (none: unscoped): two
// keys' clients that send the same session id, or the same first message
// from the same directory, hold two conversations, with their own
// processes, leases and lineage.
func (id Identity) Of(caller string) Identity {
	if caller == "" {
		return id
	}
	if id.Key != "" {
		id.Key += "@key:" + caller
	}
	if id.Parent != "" {
		id.Parent += "@key:" + caller
	}
	return id
}

// maxKeyLen bounds a conversation key as stored; longer client-sent keys
// are replaced by a digest of themselves.
const maxKeyLen = 200

// Bounded returns the identity with an over-long key replaced by a digest,
// so a client cannot make the store keep arbitrary header values.
func (id Identity) Bounded() Identity {
	if len(id.Key) > maxKeyLen {
		sum := sha256.Sum256([]byte(id.Key))
		id.Key = "h:" + hex.EncodeToString(sum[:16])
	}
	return id
}

// fingerprinted fills Key from the content when the client sent none.
func fingerprinted(id Identity, req *anthropic.MessagesRequest) Identity {
	if id.Key == "" {
		id.Key = Fingerprint(id.Cwd, req.Messages)
		id.Fingerprint = id.Key != ""
	}
	return id
}

// scoped gives a non-primary agent its own conversation under the
// session it runs in, so it never shares the user's lineage or turn lease.
func scoped(id Identity) Identity {
	if id.Agent != "" && id.Key != "" {
		id.Parent = id.Key
		id.Key = id.Key + "#" + id.Agent
	}
	return id
}

// Working-directory announcements in system prompts and messages.
var (
	cwdPrimary   = regexp.MustCompile(`Primary working directory: ([^\n]+)`)
	cwdWorking   = regexp.MustCompile(`Working directory: ([^\n]+)`)
	cwdCurrent   = regexp.MustCompile(`Current working directory: ([^\n]+)`)
	cwdTagged    = regexp.MustCompile(`<current_working_directory>([^<]+)</current_working_directory>`)
	cwdAttribute = regexp.MustCompile(`cwd="([^"]+)"`)
	cwdPwd       = regexp.MustCompile(`% pwd\n([^\n]+)`)
	cwdCodex     = regexp.MustCompile(`<cwd>([^<]+)</cwd>`)
)

// findCwd returns the first match of any pattern in the system prompt and
// then in system-role and user messages.
func findCwd(req *anthropic.MessagesRequest, patterns ...*regexp.Regexp) string {
	texts := append([]string(nil), req.System...)
	for _, m := range req.Messages {
		if m.Role == anthropic.RoleAssistant {
			continue
		}
		for _, b := range m.Content {
			if b.Type == anthropic.BlockText {
				texts = append(texts, b.Text)
			}
		}
	}
	for _, p := range patterns {
		for _, t := range texts {
			if m := p.FindStringSubmatch(t); m != nil {
				return strings.TrimSpace(m[1])
			}
		}
	}
	return ""
}
