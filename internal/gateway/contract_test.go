package gateway

import (
	"encoding/json"
	"testing"

	"github.com/meridian-gw/meridian/internal/backend"
)

// A live process continues only under the identical contract: every field
// the CLI takes at start changes the key; nothing else does.
func TestContractKey(t *testing.T) {
	base := func() backend.StartOptions {
		return backend.StartOptions{
			Model: "m", Dir: "/w", MaxOutputTokens: 100, Effort: "high", System: []string{"a", "b"},
			Thinking: backend.Thinking{Mode: backend.ThinkingEnabled, Budget: 1000},
			Tools:    []backend.Tool{{Name: "read", Description: "Read", InputSchema: json.RawMessage(`{"type":"object"}`)}},
		}
	}
	key := contractKey(base())
	if contractKey(base()) != key {
		t.Fatal("the key is not stable")
	}
	for name, change := range map[string]func(*backend.StartOptions){
		"model":           func(o *backend.StartOptions) { o.Model = "n" },
		"directory":       func(o *backend.StartOptions) { o.Dir = "/x" },
		"output limit":    func(o *backend.StartOptions) { o.MaxOutputTokens = 200 },
		"thinking mode":   func(o *backend.StartOptions) { o.Thinking.Mode = backend.ThinkingAdaptive },
		"thinking budget": func(o *backend.StartOptions) { o.Thinking.Budget = 2000 },
		"effort":          func(o *backend.StartOptions) { o.Effort = "low" },
		"system prompt":   func(o *backend.StartOptions) { o.System[1] = "c" },
		"system split":    func(o *backend.StartOptions) { o.System = []string{"ab"} },
		"tool added":      func(o *backend.StartOptions) { o.Tools = append(o.Tools, backend.Tool{Name: "write"}) },
		"tool removed":    func(o *backend.StartOptions) { o.Tools = nil },
		"tool redefined": func(o *backend.StartOptions) {
			o.Tools[0].InputSchema = json.RawMessage(`{"type":"object","required":["p"]}`)
		},
		"tool described":   func(o *backend.StartOptions) { o.Tools[0].Description = "Read a file" },
		"system into tool": func(o *backend.StartOptions) { o.System = []string{"a"}; o.Tools[0].Name = "b" },
	} {
		o := base()
		change(&o)
		if contractKey(o) == key {
			t.Errorf("changing the %s keeps the contract", name)
		}
	}
	// Per-turn settings are no part of it.
	o := base()
	o.Resume, o.ResumeAt, o.SessionID = "s", "pin", "id"
	if contractKey(o) != key {
		t.Error("where a session resumes changed its contract")
	}
}
