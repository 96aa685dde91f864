package testkit

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FakeClaude prepares the scripted stand-in CLI (testdata/fakeclaude) to
// play script, and returns its path and the environment entry that points
// it at the script. Stand-ins are for fault injection only: crashes, hangs,
// garbage output. Everything else runs against the real CLI.
func FakeClaude(t testing.TB, script ...string) (path, envEntry string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(file, []byte(strings.Join(script, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(RepoRoot(t), "internal", "testkit", "testdata", "fakeclaude"), "FAKECLAUDE_SCRIPT=" + file
}

// Lines of a scripted CLI turn, in the CLI's stream-json shapes.
const (
	FakeInit         = `{"type":"system","subtype":"init","session_id":"fake-session","model":"test-model"}`
	FakeMessageStart = `{"type":"stream_event","event":{"type":"message_start","message":{"id":"msg_fake","type":"message","role":"assistant","model":"test-model","content":[],"usage":{"input_tokens":3,"output_tokens":1}}},"api_message_id":"msg_fake","session_id":"fake-session","parent_tool_use_id":null}`
	FakeTextStart    = `{"type":"stream_event","event":{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}},"api_message_id":"msg_fake","session_id":"fake-session","parent_tool_use_id":null}`
	FakeTextStop     = `{"type":"stream_event","event":{"type":"content_block_stop","index":0},"api_message_id":"msg_fake","session_id":"fake-session","parent_tool_use_id":null}`
	FakeMessageDelta = `{"type":"stream_event","event":{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":2}},"api_message_id":"msg_fake","session_id":"fake-session","parent_tool_use_id":null}`
	FakeMessageStop  = `{"type":"stream_event","event":{"type":"message_stop"},"api_message_id":"msg_fake","session_id":"fake-session","parent_tool_use_id":null}`
	FakeResult       = `{"type":"result","subtype":"success","is_error":false,"result":"","stop_reason":"end_turn","session_id":"fake-session","usage":{"input_tokens":3,"output_tokens":2,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}}`
)

// FakeTextDelta is a stream_event line carrying one text delta.
func FakeTextDelta(text string) string {
	return `{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":` + quote(text) + `}},"api_message_id":"msg_fake","session_id":"fake-session","parent_tool_use_id":null}`
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
