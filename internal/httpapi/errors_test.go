package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// apiError unwraps the SDK's error.
func apiError(t *testing.T, err error) *sdk.Error {
	t.Helper()
	var ae *sdk.Error
	if !errors.As(err, &ae) {
		t.Fatalf("error %v (%T) is not an API error", err, err)
	}
	return ae
}

func retryAfter(t *testing.T, ae *sdk.Error) int {
	t.Helper()
	if ae.Response == nil {
		t.Fatal("no HTTP response on the error")
	}
	v := ae.Response.Header.Get("Retry-After")
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("Retry-After = %q, want whole seconds", v)
	}
	if n < 1 || n > 86400 {
		t.Fatalf("Retry-After = %d, outside [1, 86400]", n)
	}
	return n
}

func newMessage(s *stack, text string) error {
	_, err := s.client().Messages.New(context.Background(), sdk.MessageNewParams{
		Model: "test-model", MaxTokens: 100, Messages: []sdk.MessageParam{userMessage(text)},
	})
	return err
}

// unifiedReset returns the subscription rate-limit headers the API sends
// with a refused request, resetting at the given time.
func unifiedReset(at time.Time, status string) map[string]string {
	reset := fmt.Sprint(at.Unix())
	return map[string]string{
		"retry-after":                                      "7",
		"anthropic-ratelimit-unified-status":               status,
		"anthropic-ratelimit-unified-reset":                reset,
		"anthropic-ratelimit-unified-5h-status":            status,
		"anthropic-ratelimit-unified-5h-reset":             reset,
		"anthropic-ratelimit-unified-5h-utilization":       "1.0",
		"anthropic-ratelimit-unified-representative-claim": "five_hour",
	}
}

// With an API key and no CLI retries, the upstream's retry-after does not
// survive into what the CLI reports: the wait is the rate-limit default.
func TestRateLimitDefaultWait(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	s.Upstream.Always(testkit.Reply{Status: 429, Headers: map[string]string{"retry-after": "7"}})

	ae := apiError(t, newMessage(s, "hi"))
	if ae.StatusCode != 429 || ae.Type() != "rate_limit_error" {
		t.Fatalf("got %d %s, want 429 rate_limit_error", ae.StatusCode, ae.Type())
	}
	if got := retryAfter(t, ae); got != 60 {
		t.Fatalf("Retry-After = %d, want the 60 s default", got)
	}
}

// When the CLI retries, it waits what the upstream's retry-after says and
// reports that delay; the client's wait follows it.
func TestRateLimitFollowsUpstreamRetryAfter(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{env: []string{"CLAUDE_CODE_MAX_RETRIES=1"}})
	s.Upstream.Always(testkit.Reply{Status: 429, Headers: map[string]string{"retry-after": "3"}})

	ae := apiError(t, newMessage(s, "hi"))
	if ae.StatusCode != 429 {
		t.Fatalf("status = %d, want 429", ae.StatusCode)
	}
	// The CLI adds up to a second of jitter to the 3 s it was told.
	if got := retryAfter(t, ae); got < 3 || got > 5 {
		t.Fatalf("Retry-After = %d, want about 3 (the upstream's retry-after)", got)
	}
}

// A subscription login gets the window's reset time from the rate-limit
// headers, and the client's wait runs until then.
func TestRateLimitFollowsWindowReset(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{env: []string{"ANTHROPIC_API_KEY=", "CLAUDE_CODE_OAUTH_TOKEN=test-oauth-token"}})
	reset := time.Now().Add(2 * time.Hour)
	s.Upstream.Always(testkit.Reply{Status: 429, Headers: unifiedReset(reset, "rejected")})

	ae := apiError(t, newMessage(s, "hi"))
	if ae.StatusCode != 429 {
		t.Fatalf("status = %d, want 429", ae.StatusCode)
	}
	want := int(time.Until(reset).Seconds())
	if got := retryAfter(t, ae); got < want-10 || got > want+10 {
		t.Fatalf("Retry-After = %d, want about %d (until the window resets)", got, want)
	}
}

func TestOverloadedCarriesWait(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	s.Upstream.Always(testkit.Reply{Status: 529})

	ae := apiError(t, newMessage(s, "hi"))
	if ae.StatusCode != 529 || ae.Type() != "overloaded_error" {
		t.Fatalf("got %d %s, want 529 overloaded_error", ae.StatusCode, ae.Type())
	}
	if host := strings.TrimPrefix(s.Upstream.URL, "http://"); strings.Contains(ae.RawJSON(), host) || strings.Contains(ae.RawJSON(), "127.0.0.1") {
		t.Fatalf("the error reveals the upstream's address: %s", ae.RawJSON())
	}
	if got := retryAfter(t, ae); got != 5 {
		t.Fatalf("Retry-After = %d, want the 5 s overload default", got)
	}
}

func TestUpstreamErrorsMapToStatuses(t *testing.T) {
	t.Parallel()
	cases := []struct {
		reply      testkit.Reply
		status     int
		errType    string
		retryAfter bool
	}{
		{testkit.Reply{Status: 401}, 401, "authentication_error", false},
		{testkit.Reply{Status: 500}, 502, "api_error", false},
		{testkit.Reply{Status: 503}, 503, "api_error", true},
		{testkit.Reply{Status: 400, ErrorMessage: "prompt is too long: 250000 tokens > 200000 maximum"}, 400, "invalid_request_error", false},
	}
	for _, c := range cases {
		t.Run(strconv.Itoa(c.reply.Status), func(t *testing.T) {
			t.Parallel()
			s := newStack(t, stackOptions{})
			s.Upstream.Always(c.reply)
			ae := apiError(t, newMessage(s, "hi"))
			if ae.StatusCode != c.status || string(ae.Type()) != c.errType {
				t.Fatalf("got %d %s, want %d %s", ae.StatusCode, ae.Type(), c.status, c.errType)
			}
			if c.retryAfter {
				retryAfter(t, ae)
			} else if v := ae.Response.Header.Get("Retry-After"); v != "" {
				t.Fatalf("unexpected Retry-After %q", v)
			}
			// What another try cannot fix says so: Claude Code retries a
			// 401 for three minutes otherwise. The rest may be retried.
			want := ""
			if c.status < 500 {
				want = "false"
			}
			if got := ae.Response.Header.Get("X-Should-Retry"); got != want {
				t.Fatalf("X-Should-Retry = %q, want %q", got, want)
			}
		})
	}
}

// A failure after the stream began ends it with an error event that
// carries the wait; no message_stop follows.
func TestStreamingErrorEventCarriesRetryAfter(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{env: []string{"ANTHROPIC_API_KEY=", "CLAUDE_CODE_OAUTH_TOKEN=test-oauth-token"}})
	reset := time.Now().Add(90 * time.Minute)
	// The first call streams text and a call to a tool the CLI does not
	// have; the CLI answers that itself and calls again, and is refused.
	s.Upstream.Enqueue(testkit.Reply{Text: "Let me look.", ToolUses: []testkit.ToolUse{{Name: "read", Input: map[string]any{"path": "x"}}}})
	s.Upstream.Always(testkit.Reply{Status: 429, Headers: unifiedReset(reset, "rejected")})

	stream := s.client().Messages.NewStreaming(context.Background(), sdk.MessageNewParams{
		Model: "test-model", MaxTokens: 100, Messages: []sdk.MessageParam{userMessage("look it up")},
	})
	var kinds []string
	var msg sdk.Message
	for stream.Next() {
		kinds = append(kinds, stream.Current().Type)
		_ = msg.Accumulate(stream.Current())
	}
	ae := apiError(t, stream.Err())
	var body struct {
		Error struct {
			Type       string `json:"type"`
			RetryAfter int    `json:"retry_after"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(ae.RawJSON()), &body); err != nil {
		t.Fatalf("error event %q: %v", ae.RawJSON(), err)
	}
	want := int(time.Until(reset).Seconds())
	if body.Error.Type != "rate_limit_error" || body.Error.RetryAfter < want-10 || body.Error.RetryAfter > want+10 {
		t.Fatalf("error event = %s, want rate_limit_error with retry_after about %d", ae.RawJSON(), want)
	}
	if len(kinds) == 0 || kinds[0] != "message_start" {
		t.Fatalf("events before the error: %v", kinds)
	}
	for _, k := range kinds {
		if k == "message_stop" {
			t.Fatalf("message_stop before the error event: %v", kinds)
		}
	}
	if len(msg.Content) != 1 || msg.Content[0].Text != "Let me look." {
		t.Fatalf("streamed content = %+v (the CLI's own tool call must not reach the client)", msg.Content)
	}
}
