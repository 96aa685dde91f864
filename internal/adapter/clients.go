package adapter

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/meridian-gw/meridian/internal/anthropic"
)

// claudeCode: X-Claude-Code-Session-Id, else the session_id inside the
// JSON string in metadata.user_id. Its subagents keep the session id and
// add x-claude-code-agent-id. A parent_session_id beside the session_id
// links a conversation to the one that started it.
type claudeCode struct{}

func (claudeCode) Name() string { return ClaudeCode }

func (claudeCode) Identify(h http.Header, req *anthropic.MessagesRequest) Identity {
	id := Identity{Client: ClaudeCode, Cwd: findCwd(req, cwdPrimary)}
	if agent := claudeCodeHelper(req); agent != "" {
		// Sent under the session's id, it belongs to no conversation:
		// served on its own, it never displaces the session's process.
		id.Mode, id.Agent = Subagent, agent
		return id
	}
	session, parent := metadataSession(req.Metadata)
	id.Key = strings.TrimSpace(h.Get("X-Claude-Code-Session-Id"))
	if id.Key == "" {
		id.Key = session
	}
	if agent := strings.TrimSpace(h.Get("X-Claude-Code-Agent-Id")); agent != "" {
		id.Mode, id.Agent = Subagent, "agent-"+agent
	} else if parent != "" && parent != id.Key {
		id.Mode, id.Parent = Subagent, parent
	}
	return fingerprinted(scoped(id), req)
}

// claudeCodeHelper names a one-shot request Claude Code's own tools send
// while a turn waits on them: its WebSearch tool's search (only the
// web_search server tool, the query as the one message) and its WebFetch
// tool's page summary (no tools, the page as the one message).
func claudeCodeHelper(req *anthropic.MessagesRequest) string {
	if len(req.Messages) != 1 {
		return ""
	}
	text := strings.TrimSpace(firstText(req.Messages[0]))
	switch {
	case strings.HasPrefix(text, "Perform a web search for the query:") && onlyServerTools(req):
		return "web-search"
	case strings.HasPrefix(text, "Web page content:") && len(req.Tools) == 0:
		return "web-fetch"
	}
	return ""
}

func firstText(m anthropic.Message) string {
	for _, b := range m.Content {
		if b.Type == anthropic.BlockText {
			return b.Text
		}
	}
	return ""
}

// onlyServerTools reports a request whose every tool is the API's own.
func onlyServerTools(req *anthropic.MessagesRequest) bool {
	for _, raw := range req.Tools {
		var t struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(raw, &t) != nil || t.Type == "" || t.Type == "custom" {
			return false
		}
	}
	return len(req.Tools) > 0
}

// metadataSession reads the session_id and parent_session_id inside the
// JSON string in metadata.user_id.
func metadataSession(raw json.RawMessage) (session, parent string) {
	var md struct {
		UserID string `json:"user_id"`
	}
	if json.Unmarshal(raw, &md) != nil || md.UserID == "" {
		return "", ""
	}
	var inner struct {
		SessionID       string `json:"session_id"`
		ParentSessionID string `json:"parent_session_id"`
	}
	if json.Unmarshal([]byte(md.UserID), &inner) != nil {
		return "", ""
	}
	return strings.TrimSpace(inner.SessionID), strings.TrimSpace(inner.ParentSessionID)
}

// openCode: x-opencode-session (provider ids starting with "opencode"),
// else x-session-affinity or x-session-id. Its one-shot helper agents
// (title, compaction) run under the user's session id and are
// scoped apart; x-parent-session-id links a task subagent to its parent.
type openCode struct{}

func (openCode) Name() string { return OpenCode }

func (openCode) Identify(h http.Header, req *anthropic.MessagesRequest) Identity {
	id := Identity{Client: OpenCode, Cwd: findCwd(req, cwdWorking)}
	for _, name := range []string{"X-Opencode-Session", "X-Session-Affinity", "X-Session-Id"} {
		if v := strings.TrimSpace(h.Get(name)); v != "" {
			id.Key = v
			break
		}
	}
	if agent := openCodeAgent(h, req); agent != "" {
		id.Mode, id.Agent = Subagent, agent
		id = scoped(id)
	} else if parent := strings.TrimSpace(h.Get("X-Parent-Session-Id")); parent != "" {
		id.Mode, id.Parent = Subagent, parent
	}
	return fingerprinted(id, req)
}

// openCodeAgent names a non-primary OpenCode agent: from the headers
// Meridian's OpenCode plugin sends, else from the agent's system prompt.
func openCodeAgent(h http.Header, req *anthropic.MessagesRequest) string {
	name := strings.ToLower(strings.TrimSpace(h.Get("X-Opencode-Agent-Name")))
	mode := strings.ToLower(strings.TrimSpace(h.Get("X-Opencode-Agent-Mode")))
	if name != "" && mode != "" && mode != "primary" {
		return name
	}
	return helperByPrompt([]string{strings.Join(req.System, "\n")}, openCodeHelpers)
}

// helperPrompt names a client's one-shot agent by how its system prompt
// begins.
type helperPrompt struct{ prefix, agent string }

var (
	openCodeHelpers = []helperPrompt{
		{"You are a title generator", "title"},
		{"You are a helpful AI assistant tasked with summarizing conversations", "compaction"},
	}
	crushHelpers = []helperPrompt{
		{"You will generate a short title", "title"},
		{"You are summarizing a conversation to preserve context", "summary"},
	}
)

// helperByPrompt names the helper agent whose prompt one of systems
// begins with, or "".
func helperByPrompt(systems []string, helpers []helperPrompt) string {
	for _, s := range systems {
		s = strings.TrimSpace(s)
		for _, h := range helpers {
			if strings.HasPrefix(s, h.prefix) {
				return h.agent
			}
		}
	}
	return ""
}

// crush: X-Session-Id (a hash of its session UUID) on every API. Its
// title and summary requests carry the same id, so they are scoped apart
// as OpenCode's helper agents are.
type crush struct{}

func (crush) Name() string { return Crush }

func (crush) Identify(h http.Header, req *anthropic.MessagesRequest) Identity {
	id := Identity{Client: Crush, Cwd: findCwd(req, cwdWorking, cwdCurrent)}
	id.Key = strings.TrimSpace(h.Get("X-Session-Id"))
	// Its helpers' prompts may follow a configured prefix of the user's.
	if agent := helperByPrompt(req.System, crushHelpers); agent != "" {
		id.Mode, id.Agent = Subagent, agent
		id = scoped(id)
	}
	return fingerprinted(id, req)
}

// pi sends a session_id header on its Responses models only; elsewhere
// it is fingerprinted.
type pi struct{}

func (pi) Name() string { return Pi }

func (pi) Identify(h http.Header, req *anthropic.MessagesRequest) Identity {
	id := Identity{Client: Pi, Cwd: findCwd(req, cwdCurrent), Key: strings.TrimSpace(h.Get("Session_id"))}
	return fingerprinted(id, req)
}

// codex names its conversation in session-id (and thread-id, the same
// for the main thread) on every request; its working directory is in the
// <environment_context> it sends as a user message.
type codex struct{}

func (codex) Name() string { return Codex }

func (codex) Identify(h http.Header, req *anthropic.MessagesRequest) Identity {
	id := Identity{Client: Codex, Cwd: findCwd(req, cwdCodex)}
	session, thread := strings.TrimSpace(h.Get("Session-Id")), strings.TrimSpace(h.Get("Thread-Id"))
	id.Key = session
	if thread != "" && thread != session {
		// Another thread of the session: a subagent of its own.
		id.Key, id.Mode = thread, Subagent
		id.Parent = session
	}
	return fingerprinted(id, req)
}

// droid (Factory) sends none either; its working directory is in a
// system reminder as the output of pwd.
type droid struct{}

func (droid) Name() string { return Droid }

func (droid) Identify(_ http.Header, req *anthropic.MessagesRequest) Identity {
	return fingerprinted(Identity{Client: Droid, Cwd: findCwd(req, cwdPwd)}, req)
}

// forgeCode: fingerprint; cwd from <current_working_directory>.
type forgeCode struct{}

func (forgeCode) Name() string { return ForgeCode }

func (forgeCode) Identify(_ http.Header, req *anthropic.MessagesRequest) Identity {
	return fingerprinted(Identity{Client: ForgeCode, Cwd: findCwd(req, cwdTagged)}, req)
}

// liteLLM: x-litellm-session-id.
type liteLLM struct{}

func (liteLLM) Name() string { return LiteLLM }

func (liteLLM) Identify(h http.Header, req *anthropic.MessagesRequest) Identity {
	id := Identity{Client: LiteLLM, Cwd: findCwd(req, cwdAttribute, cwdWorking)}
	id.Key = strings.TrimSpace(h.Get("X-Litellm-Session-Id"))
	return fingerprinted(id, req)
}

// polytoken: the trimmed X-Polytoken-Session value is the identity. Blank
// means no identity: such a request is served alone, never fingerprinted.
type polytoken struct{}

func (polytoken) Name() string { return Polytoken }

func (polytoken) Identify(h http.Header, req *anthropic.MessagesRequest) Identity {
	return Identity{Client: Polytoken, Key: strings.TrimSpace(h.Get("X-Polytoken-Session")), Cwd: findCwd(req, cwdWorking, cwdCurrent)}
}

// generic: any other client, by fingerprint, unless it names its session
// (and its parent's) in metadata.user_id as Claude Code does.
type generic struct{}

func (generic) Name() string { return Generic }

func (generic) Identify(_ http.Header, req *anthropic.MessagesRequest) Identity {
	id := Identity{Client: Generic, Cwd: findCwd(req, cwdPrimary, cwdWorking, cwdCurrent, cwdTagged)}
	var parent string
	id.Key, parent = metadataSession(req.Metadata)
	if id.Key != "" && parent != "" && parent != id.Key {
		id.Mode, id.Parent = Subagent, parent
	}
	return fingerprinted(id, req)
}
