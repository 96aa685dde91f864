package backend

import "encoding/json"

// The event sequences every driver emits alike, written into one reused
// Event as the relay path does.

// EmitText emits a text delta on the open text block at index, then a
// Flush: a trickle goes out at once.
func EmitText(emit func(*Event) error, ev *Event, index int, text string) error {
	d, _ := json.Marshal(map[string]string{"type": "text_delta", "text": text})
	*ev = Event{Kind: BlockDelta, Index: index, DeltaType: "text_delta", Delta: d, Text: text}
	if err := emit(ev); err != nil {
		return err
	}
	*ev = Event{Kind: Flush}
	return emit(ev)
}

// EmitTextStart opens a text block at index.
func EmitTextStart(emit func(*Event) error, ev *Event, index int) error {
	*ev = Event{Kind: BlockStart, Index: index, BlockType: "text", Block: json.RawMessage(`{"type":"text","text":""}`)}
	return emit(ev)
}

// EmitToolUse emits one whole tool_use block at index: its start, its
// input as one delta, its stop.
func EmitToolUse(emit func(*Event) error, ev *Event, index int, id, name string, input json.RawMessage) error {
	start, _ := json.Marshal(map[string]any{"type": "tool_use", "id": id, "name": name, "input": map[string]any{}})
	*ev = Event{Kind: BlockStart, Index: index, BlockType: "tool_use", Block: start}
	if err := emit(ev); err != nil {
		return err
	}
	delta, _ := json.Marshal(map[string]string{"type": "input_json_delta", "partial_json": string(input)})
	*ev = Event{Kind: BlockDelta, Index: index, DeltaType: "input_json_delta", Delta: delta}
	if err := emit(ev); err != nil {
		return err
	}
	*ev = Event{Kind: BlockStop, Index: index}
	return emit(ev)
}
