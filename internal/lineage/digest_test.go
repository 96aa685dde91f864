package lineage

import (
	"testing"

	"github.com/meridian-gw/meridian/internal/anthropic"
)

func msgs(t *testing.T, js string) []anthropic.Message {
	t.Helper()
	req, err := anthropic.DecodeMessagesRequest([]byte(`{"model":"m","messages":` + js + `}`))
	if err != nil {
		t.Fatal(err)
	}
	return req.Messages
}

func TestDigestEquivalences(t *testing.T) {
	same := [][2]string{
		// A plain string is a single text block.
		{`[{"role":"user","content":"hi"}]`, `[{"role":"user","content":[{"type":"text","text":"hi"}]}]`},
		// cache_control does not count.
		{`[{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]}]`, `[{"role":"user","content":"hi"}]`},
		// Thinking does not count.
		{`[{"role":"assistant","content":[{"type":"thinking","thinking":"x","signature":"s"},{"type":"text","text":"a"}]}]`, `[{"role":"assistant","content":"a"}]`},
		// Key order and spacing of tool arguments do not count.
		{`[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"n","input":{"a":1,"b":[1,2]}}]}]`,
			`[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"n","input":{ "b":[1, 2], "a":1 }}]}]`},
		// Whitespace around a text does not: clients trim what they send
		// back (Crush, every text; the API refuses an assistant turn that
		// ends in whitespace).
		{`[{"role":"assistant","content":"done: ran\n\n<cwd>/p</cwd>\n"}]`, `[{"role":"assistant","content":"done: ran\n\n<cwd>/p</cwd>"}]`},
		{`[{"role":"user","content":"  hi \t"}]`, `[{"role":"user","content":"hi"}]`},
		// A text of whitespace alone is no block, as clients drop it.
		{`[{"role":"assistant","content":[{"type":"text","text":"\n"},{"type":"tool_use","id":"t","name":"n","input":{}}]}]`,
			`[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"n","input":{}}]}]`},
		{`[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":" "},{"type":"text","text":"x"}]}]}]`,
			`[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"x"}]}]`},
		// Nor of media blocks.
		{`[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA"}}]}]`,
			`[{"role":"user","content":[{"source":{"data":"AA","media_type":"image/png","type":"base64"},"type":"image","cache_control":{"type":"ephemeral"}}]}]`},
	}
	for _, c := range same {
		a, b := msgs(t, c[0])[0], msgs(t, c[1])[0]
		if MessageDigest(a) != MessageDigest(b) {
			t.Errorf("digests differ:\n%s\n%s", c[0], c[1])
		}
	}
	different := [][2]string{
		{`[{"role":"user","content":"hi"}]`, `[{"role":"assistant","content":"hi"}]`},
		// Block boundaries count.
		{`[{"role":"user","content":[{"type":"text","text":"ab"}]}]`, `[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]`},
		{`[{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"n","input":{}}]}]`, `[{"role":"assistant","content":[{"type":"tool_use","id":"t2","name":"n","input":{}}]}]`},
		{`[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"n","input":{"a":1}}]}]`, `[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"n","input":{"a":2}}]}]`},
		{`[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"x"}]}]`, `[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"x","is_error":true}]}]`},
		{`[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"x"}]}]`, `[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"y"}]}]`},
		// Whitespace inside a text counts.
		{`[{"role":"user","content":"a b"}]`, `[{"role":"user","content":"a  b"}]`},
		{`[{"role":"user","content":"a\nb"}]`, `[{"role":"user","content":"a b"}]`},
	}
	for _, c := range different {
		a, b := msgs(t, c[0])[0], msgs(t, c[1])[0]
		if MessageDigest(a) == MessageDigest(b) {
			t.Errorf("digests equal:\n%s\n%s", c[0], c[1])
		}
	}
	if d := MessageDigest(msgs(t, `[{"role":"user","content":"hi"}]`)[0]); func() bool { p, ok := ParseDigest(d.String()); return !ok || p != d }() {
		t.Error("digest does not round-trip through its string form")
	}
}
