package suggest

import "testing"

func TestNearest(t *testing.T) {
	names := []string{"claude-code", "opencode", "codex", "/v1/messages", "/v1/models", "claude-sonnet-4-5"}
	for in, want := range map[string]string{
		"claude":           "claude-code", // a prefix
		"opencod":          "opencode",
		"codec":            "codex",
		"/v1/message":      "/v1/messages",
		"/v1/model":        "/v1/models",
		"claude-sonet-4-5": "claude-sonnet-4-5",
		"gpt-5":            "",
		"":                 "",
	} {
		if got := Nearest(in, names); got != want {
			t.Errorf("Nearest(%q) = %q, want %q", in, got, want)
		}
	}
}
