package anthropic

import (
	"encoding/json"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// AppendString must decode to what encoding/json's encoding decodes to,
// including for invalid UTF-8 and control characters.
func TestAppendStringRoundTrips(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.OneOf(rapid.String(), rapid.StringN(0, 64, -1), rapid.Custom(func(t *rapid.T) string {
			return string(rapid.SliceOf(rapid.Byte()).Draw(t, "bytes"))
		})).Draw(t, "s")
		var got, want string
		if err := json.Unmarshal(AppendString(nil, s), &got); err != nil {
			t.Fatalf("invalid JSON for %q: %v", s, err)
		}
		std, _ := json.Marshal(s)
		_ = json.Unmarshal(std, &want)
		if got != want {
			t.Fatalf("AppendString(%q) decodes to %q, encoding/json to %q", s, got, want)
		}
	})
}

func TestFramesAreWellFormedSSE(t *testing.T) {
	u := Usage{InputTokens: 1, OutputTokens: 2, CacheCreationInputTokens: 3, CacheReadInputTokens: 4}
	frames := map[string][]byte{
		"message_start":       AppendMessageStart(nil, "msg_1", "m\"odel", u),
		"content_block_start": AppendBlockStart(nil, 0, json.RawMessage(`{"type":"text","text":""}`)),
		"content_block_delta": AppendBlockDelta(nil, 0, json.RawMessage(`{"type":"text_delta","text":"hi"}`)),
		"content_block_stop":  AppendBlockStop(nil, 0),
		"message_delta":       AppendMessageDelta(nil, StopEndTurn, "", u),
		"message_stop":        AppendMessageStop(nil),
		"ping":                AppendPing(nil),
		"error":               AppendErrorEvent(nil, ErrRateLimit, "slow down", 42),
	}
	for name, f := range frames {
		s := string(f)
		if !strings.HasPrefix(s, "event: "+name+"\ndata: ") || !strings.HasSuffix(s, "\n\n") || strings.Count(s, "\n") != 3 {
			t.Fatalf("%s frame is not one SSE event: %q", name, s)
		}
		data := strings.TrimSuffix(strings.SplitN(s, "data: ", 2)[1], "\n\n")
		var v struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal([]byte(data), &v); err != nil || v.Type != name {
			t.Fatalf("%s frame data %q: type %q, err %v", name, data, v.Type, err)
		}
	}
	var errFrame struct {
		Error struct {
			RetryAfter int `json:"retry_after"`
		} `json:"error"`
	}
	data := strings.TrimSuffix(strings.SplitN(string(frames["error"]), "data: ", 2)[1], "\n\n")
	if err := json.Unmarshal([]byte(data), &errFrame); err != nil || errFrame.Error.RetryAfter != 42 {
		t.Fatalf("error frame %s", data)
	}
	var delta struct {
		Delta struct {
			StopSequence *string `json:"stop_sequence"`
		} `json:"delta"`
		Usage Usage `json:"usage"`
	}
	data = strings.TrimSuffix(strings.SplitN(string(frames["message_delta"]), "data: ", 2)[1], "\n\n")
	if err := json.Unmarshal([]byte(data), &delta); err != nil || delta.Delta.StopSequence != nil || delta.Usage != u {
		t.Fatalf("message_delta %s", data)
	}
}
