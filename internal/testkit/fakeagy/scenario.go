package main

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// scenario is what a test wants this stand-in to do, read from the file
// FAKE_AGY_SCENARIO names. Every field is optional.
type scenario struct {
	Version   string  `json:"version"`    // what --version prints (default 1.2.17)
	SignedOut bool    `json:"signed_out"` // models and turns fail as logged out
	Models    []model `json:"models"`
	// InitDelayMS delays init after start; FragmentMS is the gap between
	// text fragments.
	InitDelayMS int `json:"init_delay_ms"`
	FragmentMS  int `json:"fragment_ms"`
	// IgnoreSIGTERM forces a driver onto its SIGKILL path; Grandchild
	// starts a process that holds stdout open and outlives this one unless
	// its group is killed.
	IgnoreSIGTERM bool `json:"ignore_sigterm"`
	Grandchild    bool `json:"grandchild"`
	// Turns are matched against each prompt in order (Match is a
	// substring; "" matches all); a prompt no turn matches is answered
	// "ok".
	Turns []turn `json:"turns"`
	// Replay names a recorded stream played verbatim, after its init, as
	// the first turn's output.
	Replay string `json:"replay"`
	// ModelsStall makes the first that many `agy models` runs (counted in
	// a file under HOME) write nothing until killed: a readiness check
	// that times out.
	ModelsStall int `json:"models_stall"`
	// Usage is the data of the /usage and /quota commands.
	Usage json.RawMessage `json:"usage"`
	// EarlyStderr is written to stderr as soon as a stdin line begins,
	// before the rest of it is read 300 ms later: with a line larger than
	// a pipe holds, the driver reads it while its write is still blocked.
	EarlyStderr string `json:"early_stderr"`
}

type model struct {
	ID    string `json:"id"`
	Label string `json:"label"`
}

var defaultModels = []model{
	{"gemini-3.8-flash-high", "Gemini 3.8 Flash (High)"},
	{"gemini-3.8-flash-low", "Gemini 3.8 Flash (Low)"},
	{"gemini-3.1-pro-high", "Gemini 3.1 Pro (High)"},
	{"claude-sonnet-4-6", "Claude Sonnet 4.6 (Thinking)"},
}

// turn is a scripted turn.
type turn struct {
	Match string `json:"match"`
	Steps []step `json:"steps"`
	// Status, Error and Exit end the turn: the result's status (default
	// SUCCESS) and error, and an exit code to leave with after it.
	Status string `json:"status"`
	Error  string `json:"error"`
	Exit   *int   `json:"exit"`
	// Stall writes nothing more until killed; Crash writes half a line
	// and exits 1; Garbage writes a line that is not JSON first.
	// AgyError is written to stderr as an AGY_ERROR line before the
	// result, as agy reports model errors since 1.2.6.
	AgyError string `json:"agy_error"`
	// StderrAfter is a stderr line written 200 ms after the result: a
	// line on the slower pipe, read after the turn ended.
	StderrAfter string `json:"stderr_after"`
	// LongLine writes a stdout line of that many bytes (not JSON) first;
	// LongStderr a stderr line of that many bytes, then 256 KiB more
	// stderr, more than a pipe holds unread.
	LongLine   int  `json:"long_line"`
	LongStderr int  `json:"long_stderr"`
	Stall      bool `json:"stall"`
	Crash      bool `json:"crash"`
	Garbage    bool `json:"garbage"`
	// PrintTimeout runs past --print-timeout after the first step: agy
	// before 1.1.28 fails the turn; later ones return the partial answer
	// as a success, with a notice on stderr.
	PrintTimeout bool `json:"print_timeout"`
	// Structured is the value the turn answers under --json-schema: agy
	// runs an extra internal turn for it, a response holding its JSON line
	// and a finish step, and the result carries it.
	Structured json.RawMessage `json:"structured"`
}

// step is one scripted step. Type is agent_response (Text, Usage; the
// text's {{tool_output}} is the last tool's output), tool (Tool, Params,
// Args, Output, Error; a call_mcp_tool without Output calls the MCP server
// its ServerName configures, with arguments made up from the tool's schema
// when its params hold none), or any other step type, written DONE as it
// is.
type step struct {
	Type   string          `json:"type"`
	Text   string          `json:"text"`
	Usage  *usage          `json:"usage"`
	Tool   string          `json:"tool"`
	Params json.RawMessage `json:"params"` // what the stream shows
	Args   json.RawMessage `json:"args"`   // what a hook sees (default Params)
	Output *string         `json:"output"`
	Error  string          `json:"error"`
}

type usage struct {
	Input     int `json:"input_tokens"`
	Output    int `json:"output_tokens"`
	Thinking  int `json:"thinking_tokens"`
	CacheRead int `json:"cache_read_tokens"`
	Total     int `json:"total_tokens"`
}

func (u usage) plus(v usage) usage {
	return usage{u.Input + v.Input, u.Output + v.Output, u.Thinking + v.Thinking, u.CacheRead + v.CacheRead, u.Total + v.Total}
}

func loadScenario() (*scenario, error) {
	s := &scenario{}
	if path := os.Getenv("FAKE_AGY_SCENARIO"); path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(b, s); err != nil {
			return nil, fmt.Errorf("scenario %s: %w", path, err)
		}
	}
	if s.Version == "" {
		s.Version = "1.2.17"
	}
	if len(s.Models) == 0 {
		s.Models = defaultModels
	}
	return s, nil
}

// turnFor picks the scripted turn for a prompt.
func (s *scenario) turnFor(prompt string) turn {
	for _, t := range s.Turns {
		if strings.Contains(prompt, t.Match) {
			return t
		}
	}
	return turn{Steps: []step{{Type: "agent_response", Text: "ok\n", Usage: &usage{Input: 10, Output: 1, Total: 11}}}}
}

// conversation is what persists of a conversation between processes,
// under the (test's) HOME like agy's own store.
type conversation struct {
	ID        string  `json:"id"`
	NextStep  int     `json:"next_step"`
	NumTurns  int     `json:"num_turns"`
	Usage     usage   `json:"usage"`
	Duration  float64 `json:"duration_seconds"`
	Prompts   []string
	path      string
	isResumed bool
}

func conversationDir() string {
	return filepath.Join(os.Getenv("HOME"), ".gemini", "antigravity-cli", "conversations")
}

// openConversation resumes id, or starts a new conversation: an unknown
// id is warned about and replaced, as agy does.
func openConversation(id string) *conversation {
	if id != "" {
		path := filepath.Join(conversationDir(), id+".json")
		if b, err := os.ReadFile(path); err == nil {
			c := &conversation{}
			if json.Unmarshal(b, c) == nil {
				c.path, c.isResumed = path, true
				return c
			}
		}
		fmt.Fprintf(os.Stderr, "warning: conversation %q not found\n", id)
	}
	c := &conversation{ID: newUUID()}
	c.path = filepath.Join(conversationDir(), c.ID+".json")
	return c
}

func (c *conversation) save() {
	if err := os.MkdirAll(filepath.Dir(c.path), 0o700); err != nil {
		return
	}
	b, _ := json.Marshal(c)
	_ = os.WriteFile(c.path, b, 0o600)
}

func newUUID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
