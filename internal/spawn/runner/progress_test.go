package runner

import (
	"testing"
)

// The tap's lines become the spawn's progress: tokens from message start
// and delta, the tool from a tool_use block start; text deltas and lines
// split across writes are handled.
func TestProgressFromTheTap(t *testing.T) {
	art := Artifacts(t.TempDir())
	p := &progress{art: art}
	lines := `{"type":"stream_event","event":{"type":"message_start","message":{"usage":{"input_tokens":10,"cache_read_input_tokens":90}}}}
{"type":"stream_event","event":{"type":"content_block_delta","delta":{"type":"text_delta","text":"tool_use"}}}
{"type":"stream_event","event":{"type":"content_block_start","content_block":{"type":"tool_use","name":"Bash"}}}
{"type":"stream_event","event":{"type":"message_delta","usage":{"output_tokens":7}}}
{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Read"}]}}
`
	for i := 0; i < len(lines); i += 17 { // written in pieces, as a pipe delivers
		if _, err := p.Write([]byte(lines[i:min(i+17, len(lines))])); err != nil {
			t.Fatal(err)
		}
	}
	p.write(p.written) // the last figures, as the next tick would write them
	got, ok := art.ReadProgress()
	if !ok || got.InTok != 100 || got.OutTok != 7 || got.LastTool != "Bash" || got.Tools != 1 {
		t.Fatalf("progress %+v %v", got, ok)
	}
}
