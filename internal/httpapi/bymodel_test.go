package httpapi

import "testing"

// A request's model names its vendor: the one whose CLI answers it in
// combined mode, and the owner /v1/models shows.
func TestModelOwner(t *testing.T) {
	for body, want := range map[string]string{
		`{"model":"gpt-6.2-sol","messages":[]}`: "openai",
		`{"model":"codex-mini"}`:                "openai",
		`{"model":"o4-mini"}`:                   "openai",
		`{"model":"gemini-3.8-flash-low"}`:      "google",
		`{"model":"claude-sonnet-4-5"}`:         "anthropic",
		`{"model":"opus"}`:                      "anthropic",
		`{"model":"omni"}`:                      "anthropic",
		`{"messages":[]}`:                       "anthropic",
		`not json`:                              "anthropic",
		`{"model":" GPT-6 ","stream":true}`:     "openai",
		`{"model":"Gemini-Pro","max_tokens":1}`: "google",
	} {
		if got := ownerOf(modelOf([]byte(body))); got != want {
			t.Errorf("%s: %s, want %s", body, got, want)
		}
	}
}
