package gateway

import (
	"encoding/json"
	"testing"

	"github.com/meridian-gw/meridian/internal/backend"
)

// A live process continues only under the identical contract: every field
// the CLI takes at start changes the key; nothing else does (the tools are
// judged apart, by toolsFit).
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

// A live process serves a request whose tools it offers, in any order, or
// to which tools were only added; a tool changed or removed needs a new
// process, because the CLI would go on offering the old definition.
func TestToolsFit(t *testing.T) {
	read := backend.Tool{Name: "read", Description: "Read", InputSchema: json.RawMessage(`{"type":"object"}`)}
	write := backend.Tool{Name: "write", InputSchema: json.RawMessage(`{"type":"object"}`)}
	described := read
	described.Description = "Read a file"
	reschema := read
	reschema.InputSchema = json.RawMessage(`{"type":"object","required":["p"]}`)
	renamed := read
	renamed.Name = "read2"
	have := toolDigests([]backend.Tool{read, write})
	for _, c := range []struct {
		name       string
		want       []backend.Tool
		fits, adds bool
	}{
		{"same", []backend.Tool{read, write}, true, false},
		{"reordered", []backend.Tool{write, read}, true, false},
		{"one added", []backend.Tool{read, write, renamed}, true, true},
		{"added first", []backend.Tool{renamed, read, write}, true, true},
		{"one removed", []backend.Tool{read}, false, false},
		{"all removed", nil, false, false},
		{"redescribed", []backend.Tool{described, write}, false, false},
		{"new schema", []backend.Tool{reschema, write}, false, false},
		{"renamed", []backend.Tool{renamed, write}, false, false},
	} {
		fits, adds := toolsFit(have, toolDigests(c.want))
		if fits != c.fits || adds != c.adds {
			t.Errorf("%s: fits %v adds %v, want %v %v", c.name, fits, adds, c.fits, c.adds)
		}
	}
	// Name, description and schema are kept apart in the digest.
	a := toolDigests([]backend.Tool{{Name: "ab", Description: "c"}})
	b := toolDigests([]backend.Tool{{Name: "a", Description: "bc"}})
	if a[0] == b[0] {
		t.Error("a name's end moved into the description keeps the digest")
	}
}
