package adapter

import (
	"net/http"
	"strings"
	"testing"

	"github.com/meridian-gw/meridian/internal/anthropic"
)

func request(t *testing.T, body string) *anthropic.MessagesRequest {
	t.Helper()
	req, err := anthropic.DecodeMessagesRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func headers(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

const plain = `{"model":"m","messages":[{"role":"user","content":"hi"}]}`

func TestDetectAndIdentify(t *testing.T) {
	cases := []struct {
		name   string
		h      http.Header
		body   string
		client string
		key    string
		mode   Mode
		parent string
		cwd    string
	}{
		{"claude code header", headers("X-Claude-Code-Session-Id", "s-1", "User-Agent", "claude-cli/2.1.332 (external, cli)"),
			`{"model":"m","system":"x","messages":[{"role":"user","content":"hi"},{"role":"system","content":"# Environment\n - Primary working directory: /home/u/proj\n"}]}`,
			ClaudeCode, "s-1", Primary, "", "/home/u/proj"},
		{"claude code metadata", headers("User-Agent", "claude-cli/2.1.332"),
			`{"model":"m","metadata":{"user_id":"{\"device_id\":\"d\",\"session_id\":\"s-2\"}"},"messages":[{"role":"user","content":"hi"}]}`,
			ClaudeCode, "s-2", Primary, "", ""},
		{"claude code metadata with a parent", headers("X-Claude-Code-Session-Id", "s-3"),
			`{"model":"m","metadata":{"user_id":"{\"session_id\":\"s-3\",\"parent_session_id\":\"s-1\"}"},"messages":[{"role":"user","content":"hi"}]}`,
			ClaudeCode, "s-3", Subagent, "s-1", ""},
		{"generic client naming its session and parent", headers("User-Agent", "rlm/1"),
			`{"model":"m","metadata":{"user_id":"{\"session_id\":\"child-1\",\"parent_session_id\":\"lead-1\"}"},"messages":[{"role":"user","content":"hi"}]}`,
			Generic, "child-1", Subagent, "lead-1", ""},
		{"claude code subagent", headers("X-Claude-Code-Session-Id", "s-1", "X-Claude-Code-Agent-Id", "a1b2"), plain,
			ClaudeCode, "s-1#agent-a1b2", Subagent, "s-1", ""},
		{"claude code's WebSearch tool's search, served on its own", headers("X-Claude-Code-Session-Id", "s-1"),
			`{"model":"m","tools":[{"type":"web_search_20250305","name":"web_search","max_uses":8}],"messages":[{"role":"user","content":[{"type":"text","text":"Perform a web search for the query: go 1.26"}]}]}`,
			ClaudeCode, "", Subagent, "", ""},
		{"claude code's WebFetch tool's summary, served on its own", headers("X-Claude-Code-Session-Id", "s-1"),
			`{"model":"m","messages":[{"role":"user","content":"\nWeb page content:\n---\npage\n---\n\nsummarise"}]}`,
			ClaudeCode, "", Subagent, "", ""},
		{"a search prompt among client tools stays in its conversation", headers("X-Claude-Code-Session-Id", "s-1"),
			`{"model":"m","tools":[{"name":"Bash","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":"Perform a web search for the query: x"}]}`,
			ClaudeCode, "s-1", Primary, "", ""},
		{"opencode plain", headers("User-Agent", "opencode/1.18.33", "X-Session-Id", "ses_1", "X-Session-Affinity", "ses_1"),
			`{"model":"m","system":"You are opencode.\n<env>\n  Working directory: /w\n</env>","messages":[{"role":"user","content":"hi"}]}`,
			OpenCode, "ses_1", Primary, "", "/w"},
		{"opencode title agent", headers("X-Session-Affinity", "ses_1"),
			`{"model":"m","system":"You are a title generator. You output ONLY a thread title.","messages":[{"role":"user","content":"hi"}]}`,
			OpenCode, "ses_1#title", Subagent, "ses_1", ""},
		{"opencode plugin headers", headers("X-Opencode-Session", "ses_2", "X-Opencode-Agent-Name", "Explore", "X-Opencode-Agent-Mode", "subagent"), plain,
			OpenCode, "ses_2#explore", Subagent, "ses_2", ""},
		{"opencode task subagent", headers("X-Opencode-Session", "ses_3", "X-Parent-Session-Id", "ses_2"), plain,
			OpenCode, "ses_3", Subagent, "ses_2", ""},
		{"crush", headers("User-Agent", "Charm-Crush/0.96.1", "X-Session-Id", "abcd1234abcd1234", "X-Session-Affinity", "abcd1234abcd1234"), plain,
			Crush, "abcd1234abcd1234", Primary, "", ""},
		{"crush title agent", headers("User-Agent", "Charm-Crush/0.90.0", "X-Session-Id", "abcd1234abcd1234"),
			`{"model":"m","system":"You will generate a short title based on the first message a user begins a conversation with.\n /no_think","messages":[{"role":"user","content":"Generate a concise title for the following content:\n\nhi"}]}`,
			Crush, "abcd1234abcd1234#title", Subagent, "abcd1234abcd1234", ""},
		{"crush summary after a prefix", headers("User-Agent", "Charm-Crush/0.90.0", "X-Session-Id", "abcd1234abcd1234"),
			`{"model":"m","system":[{"type":"text","text":"A prefix of the user's."},{"type":"text","text":"You are summarizing a conversation to preserve context for continuing work later."}],"messages":[{"role":"user","content":"hi"}]}`,
			Crush, "abcd1234abcd1234#summary", Subagent, "abcd1234abcd1234", ""},
		{"litellm", headers("X-Litellm-Session-Id", "lite-1"), plain, LiteLLM, "lite-1", Primary, "", ""},
		{"polytoken", headers("X-Polytoken-Session", "  pt-9  "), plain, Polytoken, "pt-9", Primary, "", ""},
		{"polytoken blank is no identity", headers("X-Polytoken-Session", " "), plain, Polytoken, "", Primary, "", ""},
		{"explicit agent wins", headers("X-Meridian-Agent", "crush", "X-Claude-Code-Session-Id", "s-1", "X-Session-Id", "c-1"), plain,
			Crush, "c-1", Primary, "", ""},
		{"droid", headers("User-Agent", "factory-cli/1.0"),
			`{"model":"m","messages":[{"role":"user","content":"<system-reminder>% pwd\n/srv/app\n</system-reminder>hi"}]}`,
			Droid, "", Primary, "", "/srv/app"},
		{"forgecode by body", headers(),
			`{"model":"m","system":"<current_working_directory>/f</current_working_directory>","messages":[{"role":"user","content":"hi"}]}`,
			ForgeCode, "", Primary, "", "/f"},
		{"pi by body", headers("User-Agent", "Anthropic/JS 0.91.1"),
			`{"model":"m","system":"You are operating inside pi, a coding agent harness.\nCurrent working directory: /p","messages":[{"role":"user","content":"hi"}]}`,
			Pi, "", Primary, "", "/p"},
	}
	for _, c := range cases {
		req := request(t, c.body)
		a := Detect(c.h, req)
		id := a.Identify(c.h, req)
		key := id.Key
		if id.Fingerprint {
			key = "" // checked below
		}
		if a.Name() != c.client || id.Client != c.client || key != c.key || id.Mode != c.mode || id.Parent != c.parent || id.Cwd != c.cwd {
			t.Errorf("%s: got %s %+v", c.name, a.Name(), id)
		}
	}
}

func TestFingerprint(t *testing.T) {
	a := request(t, `{"model":"m","messages":[{"role":"user","content":"hello there"}]}`)
	b := request(t, `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"hello there","cache_control":{"type":"ephemeral"}}]},{"role":"assistant","content":"hi"},{"role":"user","content":"next"}]}`)
	c := request(t, `{"model":"m","messages":[{"role":"user","content":"something else"}]}`)
	id := generic{}.Identify(http.Header{}, a)
	if !id.Fingerprint || id.Key == "" || id.Key != (generic{}).Identify(http.Header{}, b).Key {
		t.Fatalf("one conversation, two fingerprints: %+v", id)
	}
	if id.Key == (generic{}).Identify(http.Header{}, c).Key {
		t.Fatal("two conversations, one fingerprint")
	}
	if Fingerprint("/a", a.Messages) == Fingerprint("/b", a.Messages) {
		t.Fatal("the working directory does not count")
	}
	// Polytoken never invents a key.
	if id := (polytoken{}).Identify(http.Header{}, a); id.Key != "" || id.Fingerprint {
		t.Fatalf("polytoken without a header: %+v", id)
	}
}

func TestOverLongKeysAreDigested(t *testing.T) {
	long := Identity{Key: strings.Repeat("x", 5000)}.Bounded()
	if len(long.Key) > maxKeyLen || !strings.HasPrefix(long.Key, "h:") {
		t.Fatalf("key %q", long.Key)
	}
	if short := (Identity{Key: "ses_1"}).Bounded(); short.Key != "ses_1" {
		t.Fatalf("a short key changed: %q", short.Key)
	}
}

// Body hints settle only what the headers left to a fingerprint: an
// explicit session names the conversation, a scope separates fingerprints
// of different callers without ever joining two conversations.
func TestWithHints(t *testing.T) {
	req := request(t, plain)
	generic := Detect(http.Header{}, req).Identify(http.Header{}, req)
	if !generic.Fingerprint {
		t.Fatalf("plain request not fingerprinted: %+v", generic)
	}
	if id := generic.WithHints(Hints{Session: " s-9 "}, req); id.Key != "s-9" || id.Fingerprint {
		t.Fatalf("explicit session: %+v", id)
	}
	a := generic.WithHints(Hints{Scope: "cache-a"}, req)
	b := generic.WithHints(Hints{Scope: "cache-b"}, req)
	if !a.Fingerprint || a.Key == b.Key || a.Key == generic.Key || a.Key != generic.WithHints(Hints{Scope: "cache-a"}, req).Key {
		t.Fatalf("scoped fingerprints: %q %q (plain %q)", a.Key, b.Key, generic.Key)
	}
	if unchanged := generic.WithHints(Hints{}, req); unchanged != generic {
		t.Fatalf("no hints changed the identity: %+v", unchanged)
	}
	h := headers("X-Claude-Code-Session-Id", "s-1")
	cc := Detect(h, req).Identify(h, req)
	if id := cc.WithHints(Hints{Session: "other", Scope: "x"}, req); id != cc {
		t.Fatalf("hints overrode a header identity: %+v", id)
	}
}

// Codex names its conversation in session-id; another thread of the
// session is a subagent with its own key. Pi's Responses models send
// session_id.
func TestCodexAndPiResponses(t *testing.T) {
	codexBody := `{"model":"m","messages":[{"role":"user","content":"<environment_context>\n  <cwd>/home/u/proj</cwd>\n</environment_context>"},{"role":"user","content":"hi"}]}`
	req := request(t, codexBody)
	h := headers("Originator", "codex_exec", "User-Agent", "codex_exec/0.171.0 (Debian 12.0.0; x86_64)", "Session-Id", "0199-a", "Thread-Id", "0199-a")
	id := Detect(h, req).Identify(h, req)
	if id.Client != Codex || id.Key != "0199-a" || id.Mode != Primary || id.Cwd != "/home/u/proj" {
		t.Fatalf("codex: %+v", id)
	}
	h.Set("Thread-Id", "0199-b")
	if sub := Detect(h, req).Identify(h, req); sub.Key != "0199-b" || sub.Mode != Subagent || sub.Parent != "0199-a" {
		t.Fatalf("codex thread: %+v", sub)
	}
	pireq := request(t, `{"model":"m","system":"You are operating inside pi, a coding agent harness.","messages":[{"role":"user","content":"hi"}]}`)
	ph := http.Header{"session_id": {"0199-pi"}}
	ph.Set("Session_id", "0199-pi")
	if pid := Detect(ph, pireq).Identify(ph, pireq); pid.Client != Pi || pid.Key != "0199-pi" || pid.Fingerprint {
		t.Fatalf("pi: %+v", pid)
	}
	if plain := Detect(http.Header{}, pireq).Identify(http.Header{}, pireq); !plain.Fingerprint {
		t.Fatalf("pi without a session: %+v", plain)
	}
}

// An identity is scoped to the API key it came with: the same session
// under two keys is two conversations, its subagent's parent link kept
// within the key; without a key nothing changes.
func TestIdentityOfAKey(t *testing.T) {
	id := Identity{Key: "s1#explore", Parent: "s1", Agent: "explore"}
	if got := id.Of(""); got != id {
		t.Fatalf("unscoped: %+v", got)
	}
	a, b := id.Of("alice"), id.Of("bob")
	if a.Key == b.Key || a.Parent == b.Parent || a.Key != "s1#explore@key:alice" || a.Parent != "s1@key:alice" {
		t.Fatalf("alice %+v, bob %+v", a, b)
	}
	if none := (Identity{}).Of("alice"); none.Key != "" || none.Parent != "" {
		t.Fatalf("a request with no identity gained one: %+v", none)
	}
}
