package gateway

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/meridian-gw/meridian/internal/anthropic"
	"github.com/meridian-gw/meridian/internal/backend"
)

// record is an Output that writes down every call.
type record struct{ calls []string }

func (r *record) Start(s Start) error {
	r.calls = append(r.calls, fmt.Sprintf("start in=%d", s.Usage.InputTokens))
	return nil
}
func (r *record) BlockStart(i int, b json.RawMessage) error {
	r.calls = append(r.calls, fmt.Sprintf("block %d %s", i, b))
	return nil
}
func (r *record) BlockDelta(i int, d json.RawMessage) error {
	r.calls = append(r.calls, fmt.Sprintf("delta %d %s", i, d))
	return nil
}
func (r *record) BlockStop(i int) error {
	r.calls = append(r.calls, fmt.Sprintf("stop %d", i))
	return nil
}
func (r *record) Flush() error  { return nil }
func (r *record) Abandon(i int) { r.calls = append(r.calls, fmt.Sprintf("abandon %d", i)) }
func (r *record) Finish(f Finish) error {
	r.calls = append(r.calls, fmt.Sprintf("finish %s %q in=%d out=%d", f.StopReason, f.StopSequence, f.Usage.InputTokens, f.Usage.OutputTokens))
	return nil
}

func start(i int, typ string) *backend.Event {
	return &backend.Event{Kind: backend.BlockStart, Index: i, BlockType: typ, Block: json.RawMessage(`{"type":"` + typ + `"}`)}
}

func text(i int, s string) *backend.Event {
	d, _ := json.Marshal(map[string]string{"type": "text_delta", "text": s})
	return &backend.Event{Kind: backend.BlockDelta, Index: i, DeltaType: "text_delta", Delta: d, Text: s}
}

func stop(i int) *backend.Event { return &backend.Event{Kind: backend.BlockStop, Index: i} }

func run(t *testing.T, req *anthropic.MessagesRequest, events []*backend.Event, res *backend.Result) []string {
	t.Helper()
	out := &record{}
	r := newRelay(out, Start{ID: "msg_1", Model: "m"}, req, func() string { return "sid" })
	for _, ev := range events {
		if err := r.handle(ev); err != nil {
			if err != errEnough {
				t.Fatal(err)
			}
			if err := r.finishEarly(); err != nil {
				t.Fatal(err)
			}
			return out.calls
		}
	}
	if err := r.finish(res); err != nil {
		t.Fatal(err)
	}
	return out.calls
}

func TestRelayDropsThinkingUnlessAskedAndRenumbers(t *testing.T) {
	events := []*backend.Event{
		{Kind: backend.MessageStart, Usage: backend.Usage{InputTokens: 9}},
		start(0, "thinking"), {Kind: backend.BlockDelta, Index: 0, DeltaType: "thinking_delta", Delta: json.RawMessage(`{"type":"thinking_delta","thinking":"hm"}`)}, stop(0),
		start(1, "text"), text(1, "first"), stop(1),
		// A second upstream message of the same turn.
		{Kind: backend.MessageStart, Usage: backend.Usage{InputTokens: 4}},
		start(2, "text"), text(2, "second"), stop(2),
	}
	res := &backend.Result{StopReason: "end_turn", Usage: backend.Usage{InputTokens: 13, OutputTokens: 5}}

	got := strings.Join(run(t, &anthropic.MessagesRequest{}, events, res), "\n")
	want := strings.Join([]string{
		"start in=9",
		`block 0 {"type":"text"}`, `delta 0 {"text":"first","type":"text_delta"}`, "stop 0",
		`block 1 {"type":"text"}`, `delta 1 {"text":"second","type":"text_delta"}`, "stop 1",
		`finish end_turn "" in=13 out=5`,
	}, "\n")
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}

	withThinking := run(t, &anthropic.MessagesRequest{Thinking: &anthropic.Thinking{Type: "adaptive"}}, events, res)
	if withThinking[1] != `block 0 {"type":"thinking"}` || withThinking[4] != `block 1 {"type":"text"}` {
		t.Fatalf("with thinking: %q", withThinking)
	}
}

func TestRelayStopSequenceEndsTheResponse(t *testing.T) {
	req := &anthropic.MessagesRequest{StopSequences: []string{"###"}}
	events := []*backend.Event{
		{Kind: backend.MessageStart, Usage: backend.Usage{InputTokens: 2}},
		start(0, "text"), text(0, "before #"), text(0, "## after"), stop(0),
	}
	got := run(t, req, events, nil)
	want := []string{"start in=2", `block 0 {"type":"text"}`, `delta 0 {"type":"text_delta","text":"before "}`, "stop 0", `finish stop_sequence "###" in=2 out=0`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestRelayHeldTextIsFlushedAtBlockEnd(t *testing.T) {
	req := &anthropic.MessagesRequest{StopSequences: []string{"###"}}
	events := []*backend.Event{start(0, "text"), text(0, "ends with #"), stop(0)}
	got := run(t, req, events, &backend.Result{StopReason: "end_turn"})
	if got[2] != `delta 0 {"type":"text_delta","text":"ends with "}` || got[3] != `delta 0 {"type":"text_delta","text":"#"}` || got[4] != "stop 0" {
		t.Fatalf("got %q", got)
	}
}

func TestRelayMaxTokensEndsTheResponse(t *testing.T) {
	events := []*backend.Event{
		{Kind: backend.MessageStart, Usage: backend.Usage{InputTokens: 2}},
		start(0, "text"), text(0, "cut sh"),
		{Kind: backend.MessageDelta, StopReason: "max_tokens", Usage: backend.Usage{OutputTokens: 10}},
		// The CLI would go on asking for more; none of it may reach the client.
		start(1, "text"), text(1, "continuation"),
	}
	got := run(t, &anthropic.MessagesRequest{}, events, nil)
	if last := got[len(got)-1]; last != `finish max_tokens "" in=2 out=10` {
		t.Fatalf("got %q", got)
	}
	if got[len(got)-2] != "stop 0" || strings.Contains(strings.Join(got, " "), "continuation") {
		t.Fatalf("got %q", got)
	}
}

func TestRelayPassesAbandonOn(t *testing.T) {
	events := []*backend.Event{start(0, "text"), text(0, "Hel"), stop(0), {Kind: backend.Abandon, Index: 0}, start(1, "text"), text(1, "Hello"), stop(1)}
	got := run(t, &anthropic.MessagesRequest{}, events, &backend.Result{StopReason: "end_turn"})
	if !strings.Contains(strings.Join(got, "|"), "stop 0|abandon 0|block 1") {
		t.Fatalf("got %q", got)
	}
}

func TestPlanRefusesWhatTheBackendCannotDo(t *testing.T) {
	g := New(Config{Workspace: "/w"})
	req, _ := anthropic.DecodeMessagesRequest([]byte(`{"model":"default","max_tokens":77,"thinking":{"type":"enabled","budget_tokens":1024},"output_config":{"effort":"low"},"system":"s","messages":[{"role":"user","content":"q"},{"role":"system","content":"env"}]}`))
	defer g.Close()
	opts, err := g.plan(req)
	if err != nil {
		t.Fatal(err)
	}
	if opts.Model != "" || opts.MaxOutputTokens != 77 || opts.Thinking.Mode != backend.ThinkingEnabled || opts.Thinking.Budget != 1024 ||
		opts.Effort != "low" || opts.Dir != "/w" || len(opts.System) != 1 {
		t.Fatalf("opts = %+v", opts)
	}
	prefill, _ := anthropic.DecodeMessagesRequest([]byte(`{"model":"m","messages":[{"role":"user","content":"q"},{"role":"assistant","content":"A:"}]}`))
	if _, err := g.plan(prefill); err == nil || err.Status != 400 {
		t.Fatalf("prefill: %v", err)
	}
}

// A turn cut short while a client tool call is still held closes only
// what the client saw: no content_block_stop for a block it never got.
func TestEarlyEndClosesOnlyReleasedBlocks(t *testing.T) {
	req := &anthropic.MessagesRequest{StopSequences: []string{"STOP"}}
	call := &backend.Event{Kind: backend.BlockStart, Index: 1, BlockType: "tool_use", Block: json.RawMessage(`{"type":"tool_use","id":"t1","name":"f","input":{}}`)}
	got := run(t, req, []*backend.Event{
		{Kind: backend.MessageStart}, start(0, "text"), text(0, "a"), stop(0), call,
		{Kind: backend.BlockDelta, Index: 1, DeltaType: "input_json_delta", Delta: json.RawMessage(`{"type":"input_json_delta","partial_json":"{"}`)},
		{Kind: backend.MessageDelta, StopReason: "max_tokens"},
	}, nil)
	for _, c := range got {
		if c == "stop -1" {
			t.Fatalf("a held call was closed toward the client: %q", got)
		}
	}
	if last := got[len(got)-1]; !strings.HasPrefix(last, "finish max_tokens") {
		t.Fatalf("calls %q", got)
	}
}
