package toolhost

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/meridian-gw/meridian/internal/backend"
)

func TestParallelToolSplitsOrRefusesWhole(t *testing.T) {
	h, err := New([]backend.Tool{{Name: "read"}, {Name: ParallelTool}}, Options{Parallel: true})
	if err != nil {
		t.Fatal(err)
	}
	if h.Parallel() != ParallelTool+"_2" {
		t.Fatalf("the parallel tool is %q beside a client tool named %q", h.Parallel(), ParallelTool)
	}
	parts, refusal := h.split(json.RawMessage(`{"calls":[{"tool":"read","arguments":{"path":"a"}},{"tool":"read","arguments":"{\"path\":\"b\"}"},{"tool":"read"}]}`))
	if refusal != "" || len(parts) != 3 || string(parts[0].Args) != `{"path":"a"}` || string(parts[1].Args) != `{"path":"b"}` || string(parts[2].Args) != `{}` {
		t.Fatalf("parts %+v, refusal %q", parts, refusal)
	}
	many := `{"calls":[` + strings.TrimSuffix(strings.Repeat(`{"tool":"read","arguments":{}},`, maxParallel+1), ",") + `]}`
	for in, want := range map[string]string{
		`{"calls":[]}`: "at least one call",
		`{"calls":{}}`: "do not fit",
		many:           fmt.Sprintf("at most %d calls", maxParallel),
		`{"calls":[{"tool":"read","arguments":{}},{"tool":"write","arguments":{}}]}`: `call 2 of 2 names "write"`,
		`{"calls":[{"tool":"` + ParallelTool + `_2","arguments":{}}]}`:               "cannot call itself",
	} {
		if parts, refusal := h.split(json.RawMessage(in)); parts != nil || !strings.Contains(refusal, want) || !strings.Contains(refusal, "No call ran") {
			t.Errorf("%s: parts %v, refusal %q, want %q", in, parts, refusal, want)
		}
	}
	if h2, _ := New([]backend.Tool{{Name: "read"}}, Options{}); h2.Parallel() != "" {
		t.Fatal("a host without the option offers the parallel tool")
	}
}

func TestParallelAnswerKeepsTheCallsOrder(t *testing.T) {
	parts := []*Call{{Name: "a"}, {Name: "b"}}
	res := combine(parts, []backend.ToolResult{
		{Content: []json.RawMessage{textBlock("one")}},
		{IsError: true, Content: []json.RawMessage{textBlock("boom")}},
	})
	var texts []string
	for _, c := range res.Content {
		var b struct{ Text string }
		_ = json.Unmarshal(c, &b)
		texts = append(texts, b.Text)
	}
	if res.IsError || strings.Join(texts, "|") != "Result of call 1 of 2 (a):|one|Call 2 of 2 (b) failed:|boom" {
		t.Fatalf("%v %q", res.IsError, texts)
	}
	if all := combine(parts[:1], []backend.ToolResult{{IsError: true}}); !all.IsError {
		t.Fatal("a parallel call whose every part failed is not an error")
	}
}
