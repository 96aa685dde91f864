package e2e

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// A refusal that arrives after the answer began is never retried on
// another profile: the client has part of an answer, and a second one
// would run the turn twice. (A scripted CLI: the upstream cannot refuse
// after its stream began.)
func TestFailoverNeverRetriesAfterOutputBegan(t *testing.T) {
	t.Parallel()
	refusal := `{"type":"result","subtype":"success","is_error":true,"result":"API Error: 429 rate limited","api_error_status":429,"api_error_type":"rate_limit_error","terminal_reason":"api_error","session_id":"fake-session","usage":{"input_tokens":3,"output_tokens":1,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}}`
	path, scriptEnv := testkit.FakeClaude(t, "@user", testkit.FakeInit, testkit.FakeMessageStart, testkit.FakeTextStart,
		testkit.FakeTextDelta("PARTIAL-ANSWER "), refusal)
	g := newGateway(t)
	g.env = append(g.env, scriptEnv)
	twoProfiles(t, g, "sk-a", "sk-b")
	g.start("--claude-path", path, "--failover", "--log-level", "debug") // the later flag wins
	req, _ := http.NewRequest(http.MethodPost, g.url+"/v1/messages",
		strings.NewReader(`{"model":"test-model","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"go"}]}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.Header.Get("X-Meridian-Profile") != "a" || strings.Count(string(body), "PARTIAL-ANSWER") != 1 ||
		!strings.Contains(string(body), "event: error") {
		t.Fatalf("profile %q, stream:\n%s", resp.Header.Get("X-Meridian-Profile"), body)
	}
}
