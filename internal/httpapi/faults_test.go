package httpapi_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/meridian-gw/meridian/internal/testkit"
)

func TestClaudeCrashMidStreamEndsWithErrorEvent(t *testing.T) {
	t.Parallel()
	path, scriptEnv := testkit.FakeClaude(t, "@user", testkit.FakeInit, testkit.FakeMessageStart,
		testkit.FakeTextStart, testkit.FakeTextDelta("half an ans"), "@stderr fatal: out of cheese", "@exit 3")
	s := newStack(t, stackOptions{claudePath: path, env: []string{scriptEnv}})

	stream := s.client().Messages.NewStreaming(context.Background(), sdk.MessageNewParams{
		Model: "test-model", MaxTokens: 100, Messages: []sdk.MessageParam{userMessage("hi")},
	})
	var text strings.Builder
	for stream.Next() {
		if d := stream.Current(); d.Type == "content_block_delta" {
			text.WriteString(d.Delta.Text)
		}
	}
	ae := apiError(t, stream.Err())
	if ae.Type() != "api_error" || !strings.Contains(ae.RawJSON(), "exit status 3") || !strings.Contains(ae.RawJSON(), "out of cheese") {
		t.Fatalf("error event = %s, want api_error naming the exit and stderr", ae.RawJSON())
	}
	if text.String() != "half an ans" {
		t.Fatalf("streamed text = %q", text.String())
	}
}

func TestClaudeCrashBeforeOutputIs500(t *testing.T) {
	t.Parallel()
	path, scriptEnv := testkit.FakeClaude(t, "@stderr Error: something broke at startup", "@exit 1")
	s := newStack(t, stackOptions{claudePath: path, env: []string{scriptEnv}})

	for _, stream := range []bool{false, true} {
		var err error
		if stream {
			st := s.client().Messages.NewStreaming(context.Background(), sdk.MessageNewParams{
				Model: "test-model", MaxTokens: 100, Messages: []sdk.MessageParam{userMessage("hi")},
			})
			for st.Next() {
			}
			err = st.Err()
		} else {
			err = newMessage(s, "hi")
		}
		ae := apiError(t, err)
		if ae.StatusCode != 500 || !strings.Contains(ae.RawJSON(), "something broke at startup") {
			t.Fatalf("stream=%v: got %d %s", stream, ae.StatusCode, ae.RawJSON())
		}
	}
}

// Lines that are not JSON, and JSON of kinds the driver does not know, are
// logged and skipped; the answer still arrives.
func TestGarbageLinesAreIgnored(t *testing.T) {
	t.Parallel()
	path, scriptEnv := testkit.FakeClaude(t, "@user", "this is not json", testkit.FakeInit,
		`{"type":"brand_new_kind","payload":{"x":1}}`, testkit.FakeMessageStart, "{broken json",
		testkit.FakeTextStart, testkit.FakeTextDelta("still "), `{"type":"stream_event","event":{"type":"mystery_event"}}`,
		testkit.FakeTextDelta("fine"), testkit.FakeTextStop, testkit.FakeMessageDelta, testkit.FakeMessageStop, testkit.FakeResult)
	s := newStack(t, stackOptions{claudePath: path, env: []string{scriptEnv}})

	msg, err := s.client().Messages.New(context.Background(), sdk.MessageNewParams{
		Model: "test-model", MaxTokens: 100, Messages: []sdk.MessageParam{userMessage("hi")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(msg.Content) != 1 || msg.Content[0].Text != "still fine" {
		t.Fatalf("content = %+v", msg.Content)
	}
}

func TestMissingClaudeIs503WithInstallHint(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := newStack(t, stackOptions{claudePath: filepath.Join(dir, "no-such-claude")})

	ae := apiError(t, newMessage(s, "hi"))
	if ae.StatusCode != 503 || !strings.Contains(ae.RawJSON(), "npm install") {
		t.Fatalf("got %d %s, want 503 with install instructions", ae.StatusCode, ae.RawJSON())
	}
	// The binary's name may show (it says which setting is wrong); its directory may not.
	if strings.Contains(ae.RawJSON(), dir) || strings.Contains(ae.RawJSON(), os.TempDir()) {
		t.Fatalf("the error shows a local path: %s", ae.RawJSON())
	}
	retryAfter(t, ae)

	// Health says the same.
	var health struct {
		Status string `json:"status"`
		Claude struct {
			Found bool   `json:"found"`
			Error string `json:"error"`
		} `json:"claude"`
	}
	resp := getJSON(t, s.URL+"/health", nil, &health)
	if resp.StatusCode != 503 || health.Status != "unavailable" || health.Claude.Found || health.Claude.Error == "" {
		t.Fatalf("health = %d %+v", resp.StatusCode, health)
	}
	if ra := resp.Header.Get("Retry-After"); ra == "" {
		t.Fatal("the health check's 503 carries no Retry-After")
	}
}
