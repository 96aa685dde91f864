package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/meridian-gw/meridian/internal/anthropic"
	"github.com/meridian-gw/meridian/internal/lineage"
)

func testSealer(t *testing.T) *Sealer {
	t.Helper()
	s, err := NewSealer(bytes.Repeat([]byte{7}, SealKeySize))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

type event struct {
	Type     string          `json:"type"`
	Seq      int             `json:"sequence_number"`
	Delta    string          `json:"delta"`
	Text     string          `json:"text"`
	Item     json.RawMessage `json:"item"`
	Response Response        `json:"response"`
}

// events parses SSE frames, checking each names its type twice alike and
// sequence numbers count up from 0.
func events(t *testing.T, body []byte) []event {
	t.Helper()
	var out []event
	for _, frame := range strings.Split(strings.TrimSuffix(string(body), "\n\n"), "\n\n") {
		name, data, ok := strings.Cut(frame, "\ndata: ")
		if !ok || !strings.HasPrefix(name, "event: ") {
			t.Fatalf("frame %q", frame)
		}
		var ev event
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("frame %q: %v", frame, err)
		}
		if ev.Type != strings.TrimPrefix(name, "event: ") || ev.Seq != len(out) {
			t.Fatalf("event %d: %s seq %d", len(out), ev.Type, ev.Seq)
		}
		out = append(out, ev)
	}
	return out
}

func types(evs []event) string {
	var s []string
	for _, e := range evs {
		s = append(s, strings.TrimPrefix(e.Type, "response."))
	}
	return strings.Join(s, " ")
}

// A reasoning model's answer: reasoning with its summary and sealed
// thinking, text, and a call to a namespaced function mapped back.
func TestResponseEventsForAnAnswer(t *testing.T) {
	req := decodeResponses(t, string(responseSeeds(t)["codex.json"]))
	sealer := testSealer(t)
	e := NewResponseEncoder(req.Meta("resp_ABC", 1700000000, sealer))
	b := e.Start(nil, "claude-x")
	b = e.BlockStart(b, 0, json.RawMessage(`{"type":"thinking","thinking":""}`))
	b = e.BlockDelta(b, 0, json.RawMessage(`{"type":"thinking_delta","thinking":"hmm"}`))
	b = e.BlockDelta(b, 0, json.RawMessage(`{"type":"signature_delta","signature":"sig"}`))
	b = e.BlockStop(b, 0)
	b = e.BlockStart(b, 1, json.RawMessage(`{"type":"text","text":""}`))
	b = e.BlockDelta(b, 1, json.RawMessage(`{"type":"text_delta","text":"On it."}`))
	b = e.BlockStop(b, 1)
	b = e.BlockStart(b, 2, json.RawMessage(`{"type":"tool_use","id":"toolu_9","name":"multi_agent_v1__spawn_agent","input":{}}`))
	b = e.BlockDelta(b, 2, json.RawMessage(`{"type":"input_json_delta","partial_json":"{\"task\":"}`))
	b = e.BlockDelta(b, 2, json.RawMessage(`{"type":"input_json_delta","partial_json":"\"x\"}"}`))
	b = e.BlockStop(b, 2)
	b, err := e.Finish(b, "tool_use", anthropic.Usage{InputTokens: 5, CacheReadInputTokens: 10, OutputTokens: 3})
	if err != nil {
		t.Fatal(err)
	}
	evs := events(t, b)
	want := "created in_progress output_item.added reasoning_summary_part.added reasoning_summary_text.delta reasoning_summary_text.done " +
		"reasoning_summary_part.done output_item.done output_item.added content_part.added output_text.delta output_text.done content_part.done " +
		"output_item.done output_item.added function_call_arguments.delta function_call_arguments.delta function_call_arguments.done output_item.done completed"
	if got := types(evs); got != want {
		t.Fatalf("events:\n got %s\nwant %s", got, want)
	}
	final := evs[len(evs)-1].Response
	if final.Status != "completed" || final.Model != "claude-x" || len(final.Output) != 3 || final.Usage.InputTokens != 15 || final.Usage.InputTokensDetails.CachedTokens != 10 {
		t.Fatalf("final = %+v", final)
	}
	var rs struct {
		ID        string `json:"id"`
		Summary   []summaryPart
		Encrypted string `json:"encrypted_content"`
	}
	_ = json.Unmarshal(final.Output[0], &rs)
	if rs.ID != "rs_ABC_0" || len(rs.Summary) != 1 || rs.Summary[0].Text != "hmm" {
		t.Fatalf("reasoning = %s", final.Output[0])
	}
	if th, ok := sealer.Open(rs.Encrypted); !ok || th.Thinking != "hmm" || th.Signature != "sig" {
		t.Fatalf("sealed thought = %+v %v", th, ok)
	}
	var fc struct {
		CallID    string `json:"call_id"`
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
		Arguments string `json:"arguments"`
		Status    string `json:"status"`
	}
	_ = json.Unmarshal(final.Output[2], &fc)
	if fc.CallID != "toolu_9" || fc.Name != "spawn_agent" || fc.Namespace != "multi_agent_v1" || fc.Arguments != `{"task":"x"}` || fc.Status != "completed" {
		t.Fatalf("function call = %s", final.Output[2])
	}
	// Streamed items are the final ones.
	if !bytes.Equal(evs[7].Item, final.Output[0]) || !bytes.Equal(evs[18].Item, final.Output[2]) {
		t.Fatalf("output_item.done differs from the final output:\n%s\n%s", evs[18].Item, final.Output[2])
	}
	// The JSON path renders the same output from the whole answer.
	content := []json.RawMessage{
		json.RawMessage(`{"type":"thinking","thinking":"hmm","signature":"sig"}`), json.RawMessage(`{"type":"text","text":"On it."}`),
		json.RawMessage(`{"type":"tool_use","id":"toolu_9","name":"multi_agent_v1__spawn_agent","input":{"task":"x"}}`),
	}
	whole, err := req.Meta("resp_ABC", 1700000000, sealer).Complete("claude-x", content, "tool_use", anthropic.Usage{})
	if err != nil || len(whole.Output) != 3 || !bytes.Equal(whole.Output[1], final.Output[1]) || !bytes.Equal(whole.Output[2], final.Output[2]) {
		t.Fatalf("JSON path output = %s (%v)", whole.Output, err)
	}
}

// What a client echoes of the answer translates back into the blocks the
// answer had (thinking restored from its seal), so lineage continues.
func TestResponsesEchoRoundTrip(t *testing.T) {
	req := decodeResponses(t, string(responseSeeds(t)["codex.json"]))
	sealer := testSealer(t)
	content := []json.RawMessage{
		json.RawMessage(`{"type":"thinking","thinking":"hmm","signature":"sig"}`), json.RawMessage(`{"type":"text","text":"First."}`),
		json.RawMessage(`{"type":"text","text":"Then."}`),
		json.RawMessage(`{"type":"tool_use","id":"toolu_9","name":"multi_agent_v1__spawn_agent","input":{"task":"x"}}`),
	}
	resp, err := req.Meta("resp_ABC", 1, sealer).Complete("m", content, "tool_use", anthropic.Usage{})
	if err != nil {
		t.Fatal(err)
	}
	answer := anthropic.Message{Role: anthropic.RoleAssistant}
	for _, raw := range content {
		b, _ := anthropic.DecodeContentBlock(raw)
		answer.Content = append(answer.Content, b)
	}
	out, _ := json.Marshal(resp.Output)
	items, err := DecodeItems(out)
	if err != nil {
		t.Fatal(err)
	}
	next := decodeResponses(t, `{"model":"m","input":[{"type":"function_call_output","call_id":"toolu_9","output":"spawned"}]}`)
	history := append([]Item{{Type: ItemMessage, Role: RoleUser, Parts: []Part{{Type: PartText, Text: "go"}}}}, items...)
	areq, err := next.Anthropic(History{Items: history, Sealer: sealer})
	if err != nil {
		t.Fatal(err)
	}
	echoed := areq.Messages[1]
	if lineage.MessageDigest(echoed) != lineage.MessageDigest(req.Echo(answer)) {
		t.Fatalf("echoed %s\nrecorded %s", roles([]anthropic.Message{echoed}), roles([]anthropic.Message{req.Echo(answer)}))
	}
	if th := echoed.Content[0]; th.Type != anthropic.BlockThinking || th.Thinking != "hmm" || th.Signature != "sig" {
		t.Fatalf("thinking was not restored: %+v", th)
	}
	if tu := echoed.Content[3]; tu.Name != "multi_agent_v1__spawn_agent" {
		t.Fatalf("the namespaced call came back as %q", tu.Name)
	}
}

// Sealed reasoning opens only under its key; anything else is ignored.
func TestSealing(t *testing.T) {
	s := testSealer(t)
	sealed := s.Seal(Thought{Thinking: "secret", Signature: "sig"})
	if strings.Contains(sealed, "secret") {
		t.Fatal("the thinking is readable in the sealed content")
	}
	other, _ := NewSealer(bytes.Repeat([]byte{8}, SealKeySize))
	forged := sealed[:len(sealed)-4] + "AAAA"
	for _, c := range []struct {
		s       *Sealer
		content string
	}{{other, sealed}, {s, forged}, {s, "gAAAAABsomebody-elses"}, {s, sealPrefix + "!!"}} {
		if _, ok := c.s.Open(c.content); ok {
			t.Fatalf("opened %q", c.content)
		}
	}
	if _, err := NewSealer([]byte("short")); err == nil {
		t.Fatal("a short key was taken")
	}
}

// With a text format the answer is held, checked and sent whole; one that
// does not fit is a FormatError and nothing of it goes out.
func TestResponseEventsHoldTextForTheFormat(t *testing.T) {
	req := decodeResponses(t, `{"model":"m","input":"x","text":{"format":{"type":"json_schema","name":"n","schema":{"type":"object","required":["n"]}}}}`)
	run := func(text string) ([]byte, error) {
		e := NewResponseEncoder(req.Meta("resp_F", 1, nil))
		b := e.Start(nil, "m")
		b = e.BlockStart(b, 0, json.RawMessage(`{"type":"text","text":""}`))
		b = e.BlockDelta(b, 0, append(anthropic.AppendString([]byte(`{"type":"text_delta","text":`), text), '}'))
		b = e.BlockStop(b, 0)
		if got := types(events(t, b)); got != "created in_progress" {
			t.Fatalf("text went out before it was checked: %s", got)
		}
		return e.Finish(b, "end_turn", anthropic.Usage{})
	}
	b, err := run("```json\n{\"n\":1}\n```")
	if err != nil {
		t.Fatal(err)
	}
	evs := events(t, b)
	if final := evs[len(evs)-1].Response; len(final.Output) != 1 || !strings.Contains(string(final.Output[0]), `"text":"{\"n\":1}"`) {
		t.Fatalf("final = %s", final.Output)
	}
	var fe *FormatError
	if _, err := run(`{"m":1}`); !errors.As(err, &fe) || !strings.Contains(err.Error(), "text.format") {
		t.Fatalf("err = %v, want a FormatError naming text.format", err)
	}
}

// A failure ends the stream with response.failed and the wait; a
// cancellation closes what was open and ends without a terminal event.
func TestResponseEventsOnFailureAndCancel(t *testing.T) {
	req := decodeResponses(t, `{"model":"m","input":"x"}`)
	e := NewResponseEncoder(req.Meta("resp_X", 1, nil))
	b := e.Start(nil, "m")
	b = e.BlockStart(b, 0, json.RawMessage(`{"type":"text","text":""}`))
	b = e.BlockDelta(b, 0, json.RawMessage(`{"type":"text_delta","text":"par"}`))
	b = e.Fail(b, 429, "slow down", 30)
	evs := events(t, b)
	last := evs[len(evs)-1]
	if last.Type != "response.failed" || last.Response.Error == nil || last.Response.Error.Code != "rate_limit_exceeded" || last.Response.Error.RetryAfter != 30 ||
		last.Response.Status != "failed" || len(last.Response.Output) != 1 {
		t.Fatalf("failed event = %+v", last)
	}
	if evs[len(evs)-2].Type != "response.output_item.done" {
		t.Fatalf("the open item was not closed: %s", types(evs))
	}
	// The message the failure cut is incomplete, in its done event and in
	// the failed response alike: it never completed.
	if item := string(evs[len(evs)-2].Item); !strings.Contains(item, `"status":"incomplete"`) {
		t.Fatalf("the cut message closed as %s", item)
	}
	if out := string(last.Response.Output[0]); !strings.Contains(out, `"status":"incomplete"`) || !strings.Contains(out, "par") {
		t.Fatalf("the failed response holds %s", out)
	}

	c := NewResponseEncoder(req.Meta("resp_Y", 1, nil))
	b = c.Queued(nil)
	b = c.Start(b, "m")
	b = c.Cancelled(b)
	if got := types(events(t, b)); got != "created in_progress" || c.Final().Status != "cancelled" {
		t.Fatalf("cancelled: %s, %s", got, c.Final().Status)
	}
}
