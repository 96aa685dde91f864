package gateway

import (
	"strings"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/backend"
)

func TestClassify(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		f          backend.Failure
		window     time.Time
		status     int
		typ        string
		retryAfter time.Duration
	}{
		{backend.Failure{Kind: backend.FailUpstream, Status: 429}, time.Time{}, 429, "rate_limit_error", 60 * time.Second},
		{backend.Failure{Kind: backend.FailUpstream, Status: 429}, now.Add(5 * time.Minute), 429, "rate_limit_error", 5 * time.Minute},
		{backend.Failure{Kind: backend.FailUpstream, Status: 429, RetryDelay: 3200 * time.Millisecond}, time.Time{}, 429, "rate_limit_error", 4 * time.Second},
		{backend.Failure{Kind: backend.FailUpstream, Status: 429, ResetsAt: now.Add(time.Hour)}, time.Time{}, 429, "rate_limit_error", time.Hour},
		{backend.Failure{Kind: backend.FailUpstream, Status: 529}, time.Time{}, 529, "overloaded_error", 5 * time.Second},
		{backend.Failure{Kind: backend.FailUpstream, Status: 401}, time.Time{}, 401, "authentication_error", 0},
		{backend.Failure{Kind: backend.FailUpstream, Status: 403}, time.Time{}, 403, "permission_error", 0},
		{backend.Failure{Kind: backend.FailUpstream, Status: 404}, time.Time{}, 404, "not_found_error", 0},
		{backend.Failure{Kind: backend.FailUpstream, Status: 400}, time.Time{}, 400, "invalid_request_error", 0},
		{backend.Failure{Kind: backend.FailUpstream, Status: 413}, time.Time{}, 413, "request_too_large", 0},
		{backend.Failure{Kind: backend.FailUpstream, Status: 500}, time.Time{}, 502, "api_error", 0},
		{backend.Failure{Kind: backend.FailUpstream, Status: 502}, time.Time{}, 502, "api_error", 0},
		{backend.Failure{Kind: backend.FailUpstream, Status: 503}, time.Time{}, 503, "api_error", 5 * time.Second},
		{backend.Failure{Kind: backend.FailUpstream, Status: 0, Message: "Connection refused"}, time.Time{}, 503, "api_error", 5 * time.Second},
		{backend.Failure{Kind: backend.FailPromptTooLong, Status: 400}, time.Time{}, 400, "invalid_request_error", 0},
		{backend.Failure{Kind: backend.FailLimit}, time.Time{}, 500, "api_error", 0},
		{backend.Failure{Kind: backend.FailBackend, Message: "claude exited"}, time.Time{}, 500, "api_error", 0},
		{backend.Failure{Kind: backend.FailUnavailable}, time.Time{}, 503, "api_error", 5 * time.Second},
	}
	for _, c := range cases {
		e := classify(&c.f, claudeCLI, c.window, now)
		if e.Status != c.status || e.Type != c.typ || e.RetryAfter != c.retryAfter {
			t.Errorf("%+v: got %d %s wait %v, want %d %s wait %v", c.f, e.Status, e.Type, e.RetryAfter, c.status, c.typ, c.retryAfter)
		}
	}
}

// Client-facing messages carry no local path and no upstream address;
// what a client needs (the install hint, times, token counts) stays.
func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		`fork/exec /home/u/.tools/claude/2.1.332/node_modules/claude: invalid argument`:              `fork/exec …/claude: invalid argument`,
		`API Error: Repeated 529 Overloaded errors. Check your inference gateway (127.0.0.1:38509).`: `API Error: Repeated 529 Overloaded errors. Check your inference gateway (an address).`,
		`request to http://10.0.0.7:8080/v1/messages failed`:                                         `request to a URL failed`,
		`upstream api.internal.example:443 refused`:                                                  `upstream an address refused`,
		`claude CLI not found ("/tmp/x/no-such-claude"): install it with ` + "`npm install -g @anthropic-ai/claude-code`" + ` (or point --claude-path / MERIDIAN_CLAUDE_PATH at the binary)`: `claude CLI not found ("…/no-such-claude"): install it with ` + "`npm install -g @anthropic-ai/claude-code`" + ` (or point --claude-path / MERIDIAN_CLAUDE_PATH at the binary)`,
		"install it as antigravity.google/cli says (its installer puts it in ~/.local/bin), sign in once by running `agy` in a terminal":                                                     "install it as antigravity.google/cli says (its installer puts it in ~/.local/bin), sign in once by running `agy` in a terminal",
		`resets 10:38pm (UTC)`:                           `resets 10:38pm (UTC)`,
		`prompt is too long: 250000 tokens > 200000 max`: `prompt is too long: 250000 tokens > 200000 max`,
		`No conversation found with session ID: 5f0c-11`: `No conversation found with session ID: 5f0c-11`,
	} {
		if got := redact(in); got != want {
			t.Errorf("redact(%q)\n = %q\nwant %q", in, got, want)
		}
	}
}

func TestCheckModel(t *testing.T) {
	for name, ok := range map[string]bool{
		"sonnet": true, "claude-opus-4-1": true, "claude-sonnet-4-5[1m]": true, "us.anthropic.claude-3-7:0": true, "default": true,
		"": false, "a b": false, "bad\x00name": false, "\u00e9t\u00e9": false, strings.Repeat("m", 257): false,
	} {
		if got := checkModel(name) == ""; got != ok {
			t.Errorf("checkModel(%.20q) ok = %v, want %v", name, got, ok)
		}
	}
}
